"""``sabot plan``: what a wave will cost before anything is spent.

The projection itself (``gateway/projection.py``) is the one a live session makes before
its first call: runs of the selected matrix times calls per run and tokens per call, from
a recorded run directory when one is given, otherwise from the figures each framework's
adapter declares. The cap is the project's (SPEC.md I51); when the projection exceeds what
the ledger leaves, seeds are cut from 5 to 3 before any cell is cut (SPEC.md I52), and the
plan names the selection to run.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pytest_sabot.commands.failure import fail
from pytest_sabot.core.model_spec import parse_model
from pytest_sabot.gateway.projection import (
    SEED_CUT_TO,
    Plan,
    RowPlan,
    per_run_from_recordings,
    project,
)

__all__ = ["SEED_CUT_TO", "Plan", "RowPlan", "cmd_plan", "per_run_from_recordings", "project"]


def cmd_plan(args: argparse.Namespace) -> int:
    import pytest

    from pytest_sabot.core.exit_codes import EXIT_GATE, EXIT_PASS
    from pytest_sabot.gateway.prices import load_prices
    from pytest_sabot.matrix.standard import load_standard
    from pytest_sabot.session.options import BY_DEST, convert
    from pytest_sabot.session.preflight import select

    if args.sabot_wave is None:
        return fail("sabot plan", "--sabot-wave is required")
    from pytest_sabot.core.frameworks import register_targets

    problem = register_targets(getattr(args, "sabot_adapter", None))
    if problem is not None:  # a matrix naming the adapter's framework needs its declaration
        return fail("sabot plan", problem)
    std = load_standard(args.sabot_wave, args.sabot_root)
    filters = {
        d.removeprefix("sabot_"): values
        for d in ("sabot_framework", "sabot_config", "sabot_operator", "sabot_task", "sabot_seed")
        if (values := convert(BY_DEST[d], getattr(args, d)))
    }
    try:  # the filters read as a pytest session reads them, with the same errors
        cells = select(std, filters) if filters else list(std.cells)
    except pytest.UsageError as exc:
        return fail("sabot plan", str(exc).removeprefix("pytest-sabot: "))
    per_run = (per_run_from_recordings(args.recorded, std.wave.wave) if args.recorded
               else None)
    model = parse_model(str(args.sabot_model))
    plan = project(
        cells,
        model=model,
        prices=load_prices(getattr(args, "sabot_prices", None)),
        cap_usd=float(args.sabot_budget_usd),
        per_run=per_run,
        source=f"recorded in {args.recorded}" if args.recorded else "built-in estimates",
        ledger_dir=Path(args.sabot_spend_ledger or "reports"),
    )
    from pytest_sabot.report.plan import print_plan
    from pytest_sabot.report.terminal import console

    print_plan(console(), plan, model)
    # A live model without a price cannot be budgeted: pytest refuses to run it, and the
    # plan says so with the same exit as a wave over the cap (do not run it).
    unpriced = plan.cost_usd is None and model.is_live
    return EXIT_GATE if plan.over_cap or unpriced else EXIT_PASS
