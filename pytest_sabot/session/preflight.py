"""Checks that must pass before the first cell runs and before any money is spent.

Each failure is a pytest usage error (exit 4, no traceback) that names the option or file,
the field and what was expected. Checks that depend only on the options run when the
session is configured; the replay coverage check runs once the selection is fixed, still
before any cell.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import pytest

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.core.model_spec import downgrade_target
from pytest_sabot.core.models.cells import Cell
from pytest_sabot.core.operators import served_model
from pytest_sabot.session.settings import Settings

if TYPE_CHECKING:
    from pytest_sabot.matrix.standard import Standard

KNOWN_BACKENDS = ("sim", "openai", "local", "replay")
KEY_VARIABLE = "OPENAI_API_KEY"


def usage(message: str) -> pytest.UsageError:
    return pytest.UsageError(f"pytest-sabot: {message}")


def check_model(settings: Settings) -> None:
    """The model spec names a known backend; a persona of the embedded model is known; a
    replay directory exists; a live model has its key, a well-formed upstream URL and a
    price."""
    spec = settings.model
    spec_text = spec.given
    if spec.scheme not in KNOWN_BACKENDS:
        raise usage(
            f"--sabot-model={spec_text}: unknown backend {spec.scheme!r}; expected one of "
            "'sim[:<persona>]', 'openai:<model>', 'local:<model>@<url>' or 'replay:<dir>'"
        )
    if spec.is_sim:
        from pytest_sabot.sim.personas import parse_persona

        try:
            parse_persona(spec.name)
        except ValueError as exc:
            raise usage(f"--sabot-model={spec_text}: {exc}") from None
        return
    if spec.is_local:
        return  # no key, no price: the spec's URL was checked when it was parsed
    if spec.is_replay:
        if not spec.replay_dir.is_dir():
            raise usage(
                f"--sabot-model={spec_text}: the replay directory {spec.name} does not exist "
                "(expected the recordings/ directory of a live run)"
            )
        return
    if settings.base_url is not None:
        parts = urlsplit(settings.base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise usage(
                f"--sabot-base-url={settings.base_url}: expected an http(s) URL such as "
                "http://127.0.0.1:8000/v1"
            )
    if settings.gateway_url is None and not os.environ.get(KEY_VARIABLE):
        raise usage(
            f"--sabot-model={spec_text} is a live run and needs the upstream key in the "
            f"environment variable {KEY_VARIABLE} (it is read from there only); nothing was run"
        )
    check_price(settings, spec.name, "--sabot-model")


def check_files(settings: Settings) -> None:
    """The files and directories the options name are usable before anything runs, whatever
    the model: a price table that reads (a keyless run loads it too), a spend ledger's
    directory that is not a file, a run history that is not a directory."""
    if settings.prices:
        from pytest_sabot.gateway.prices import load_prices

        try:
            load_prices(settings.prices)
        except SabotDataError as exc:
            raise usage(f"--sabot-prices: {exc}; nothing was run") from None
    if settings.spend_ledger:
        ledger = Path(settings.spend_ledger)
        if ledger.exists() and not ledger.is_dir():
            raise usage(
                f"--sabot-spend-ledger={ledger}: expected a directory (the project's "
                "spend-ledger.json is kept in it), got a file; nothing was run"
            )
    chosen = settings.history
    if chosen and chosen.strip().lower() != "none":
        history = Path(chosen)
        blocked = next((p for p in history.parents if p.exists() and not p.is_dir()), None)
        if history.is_dir() or blocked is not None:
            got = f"{blocked} is a file" if blocked is not None else "a directory"
            raise usage(
                f"--sabot-history={chosen}: expected a history file (SQLite, created when "
                f"missing) or 'none', got {got}; nothing was run"
            )


def unused_options(settings: Settings) -> list[str]:
    """What the session was given and will not use, said at its end (it costs nothing)."""
    lines = []
    if settings.base_url is not None and not settings.model.is_live:
        lines.append(
            f"pytest-sabot: --sabot-base-url={settings.base_url} (or SABOT_BASE_URL) was "
            "not used: it is the upstream of a live model (--sabot-model=openai:<model>), "
            f"and {settings.model.given} calls none"
        )
    given = settings.downgrade_model
    if given is not None and settings.downgrade_in_use is None:
        how = (
            "a replay serves each O4 call by the model it was recorded with"
            if settings.model.is_replay
            else f"the embedded model serves O4 calls from {settings.model.given}'s weak "
            "tier; name sim:<persona> to choose another tier"
        )
        lines.append(f"pytest-sabot: --sabot-downgrade-model={given} was not used: {how}")
    return lines


def check_price(settings: Settings, model: str, option: str) -> None:
    """A live model must have a price, or the spend cap cannot hold."""
    from pytest_sabot.gateway.prices import load_prices

    try:
        table = load_prices(settings.prices)
    except SabotDataError as exc:
        raise usage(f"--sabot-prices: {exc}") from None
    if table.price(model) is None:
        where = settings.prices or "the shipped price table"
        raise usage(
            f"{option}: no price for model {model!r} in {where}; a live run cannot be "
            "budgeted without one. Give --sabot-prices FILE with its price (USD per 1M "
            "input, cached input and output tokens); nothing was run"
        )


def check_downgrade(settings: Settings, std: Standard, cells: Iterable[Cell]) -> None:
    """A live wave with cells judged on the served model (O4) needs a priced downgrade
    model."""
    if not settings.live or not any(served_model(c.operator) for c in cells):
        return
    target = settings.downgrade_model or std.wave.downgrade_model
    name = downgrade_target(target, settings.model).name
    check_price(settings, name, f"--sabot-downgrade-model ({target})")


def check_hang_bound(settings: Settings, std: Standard) -> None:
    """A matrix that holds tool calls (O12) stops a held call at its ``hang_bound_s``; a
    whole-attempt time limit that is not longer would end such a cell as a run error
    first (SPEC I131)."""
    bound = std.wave.hang_bound_s
    if bound is None or settings.timeout <= 0 or settings.timeout > bound:
        return
    raise usage(
        f"--sabot-timeout={settings.timeout:g}: {std.wave.label} holds tool calls for up to "
        f"its hang_bound_s ({bound:g} s); expected a time limit longer than that (or 0 for "
        "none), so a held call ends at the cell's deadline and not as a run error"
    )


def check_replay_covers(settings: Settings, cell_ids: Iterable[str]) -> None:
    """Every cell a replay session runs must have a recording, or every one of them would
    end as a run error."""
    if not settings.model.is_replay:
        return
    from pytest_sabot.gateway.recording import EXCHANGES_FILE, PARTIAL_SUFFIX

    root = settings.model.replay_dir
    absent = [
        cid
        for cid in cell_ids
        if not (root / cid / EXCHANGES_FILE).is_file()
        and not (root / cid / (EXCHANGES_FILE + PARTIAL_SUFFIX)).is_file()
    ]
    if absent:
        raise usage(
            f"--sabot-model={settings.model}: {len(absent)} selected cell(s) have no recording "
            f"there (e.g. {absent[0]}: expected {root / absent[0] / EXCHANGES_FILE}); narrow "
            "the selection to the recorded cells or record them first; nothing was run"
        )


def check_projection(settings: Settings, cells: Iterable[Cell], out_dir: Path) -> None:
    """A live session projects what its selection will cost before its first call (SPEC
    I99): when the projection does not fit what the project's cap leaves, the session is
    refused with the plan, never started for the breaker to cut cells. Where cutting the
    seeds 5 -> 3 fits (standard section 8, SPEC I52) the refusal names the cut selection;
    a resumed session counts only the cells it still has to record."""
    if not settings.live:
        return
    from pytest_sabot.gateway.prices import load_prices
    from pytest_sabot.gateway.projection import SEED_CUT_TO, project
    from pytest_sabot.report.plan import plan_lines
    from pytest_sabot.results.adjudicate import read_record

    chosen = [c for c in cells if not c.carved_out]
    if settings.resume:
        chosen = [c for c in chosen if not read_record(out_dir, c.id).finished]
    if not chosen:
        return
    from pytest_sabot.session.gateway import ledger_dir

    ledger = ledger_dir(settings, out_dir)
    plan = project(chosen, model=settings.model, prices=load_prices(settings.prices),
                   cap_usd=settings.budget_usd, ledger_dir=ledger)
    if not plan.cut and not plan.over_cap:
        return
    room = f"${plan.room_usd:.2f} the project's cap of ${plan.cap_usd:.2f} leaves"
    if plan.cut and not plan.over_cap:
        before = plan.uncut_cost_usd or 0.0
        said = (
            f"the selection's {len(chosen)} runs are projected at ${before:.2f}, more than "
            f"the {room}; the standard cuts seeds 5 -> {SEED_CUT_TO} before any cell is cut: "
            f"run the cut selection with {plan.seed_option} (projected "
            f"${plan.cost_usd or 0.0:.2f})"
        )
    else:
        said = (
            f"the selection's {plan.runs} runs are projected at ${plan.cost_usd or 0.0:.2f}, "
            f"more than the {room}"
            + (f", even with seeds cut to {SEED_CUT_TO}" if plan.cut else "")
            + "; narrow the selection or raise --sabot-budget-usd"
        )
    raise usage(
        f"--sabot-budget-usd={settings.budget_usd:g}: {said}; nothing was run. The plan "
        "(sabot plan):\n  " + "\n  ".join(plan_lines(plan, settings.model, 100))
    )


def check_frameworks(cells: Iterable[Cell]) -> None:
    """Every framework the selection needs is installed (a candidate row's framework is an
    optional extra); else a usage error naming the extra, before anything runs."""
    from pytest_sabot.core.frameworks import FrameworkNotInstalled, require_frameworks

    try:
        require_frameworks(cell.framework for cell in cells)
    except FrameworkNotInstalled as exc:
        raise usage(str(exc)) from None


def check_out_dir(out: Path) -> None:
    """The output directory can be written (checked without creating anything: a session
    that runs no cell changes nothing on disk)."""
    if out.exists() and not out.is_dir():
        raise usage(f"--sabot-out={out}: is a file; expected a directory to write records to")
    probe_in = out
    while not probe_in.exists():
        if probe_in.parent == probe_in:
            break
        probe_in = probe_in.parent
    if not probe_in.is_dir():
        raise usage(
            f"--sabot-out={out}: {probe_in} is not a directory, so {out} cannot be created"
        )
    try:
        fd, name = tempfile.mkstemp(prefix=".sabot-probe-", dir=probe_in)
    except OSError as exc:
        raise usage(
            f"--sabot-out={out}: cannot write in {probe_in} ({exc.strerror or exc}); "
            "expected a writable directory; nothing was run"
        ) from None
    os.close(fd)
    os.unlink(name)


def select(std: Standard, filters: dict[str, list[str]]) -> list[Cell]:
    """The cells the ``--sabot-*`` filters select. A value the wave does not register, or
    filters that together match nothing, are usage errors naming the registered values."""
    from pytest_sabot.matrix.cells import select_cells

    wave = std.wave.wave
    for field, wanted in filters.items():
        flag = f"--sabot-{field}"
        registered = sorted({_field(c, field) for c in std.cells}, key=_order)
        unknown = [v for v in wanted if v not in registered]
        if unknown:
            raise usage(
                f"{flag}={','.join(wanted)}: {unknown[0]!r} is not registered in wave {wave} "
                f"(registered: {', '.join(registered)})"
            )
    try:
        cells = select_cells(
            std.cells,
            framework=filters.get("framework"),
            config=filters.get("config"),
            operator=filters.get("operator"),
            task=filters.get("task"),
            seed=[int(s) for s in filters["seed"]] if "seed" in filters else None,
        )
    except SabotDataError as exc:
        raise usage(str(exc)) from None
    if not cells:
        given = " ".join(f"--sabot-{k}={','.join(v)}" for k, v in filters.items())
        raise usage(f"{given}: together these filters match no cell of wave {wave}")
    return cells


def _field(cell: Cell, field: str) -> str:
    if field == "operator":
        return cell.operator or "baseline"
    return str(getattr(cell, field))


def _order(value: str) -> tuple[int, str]:
    return (0, value.zfill(8)) if value.isdigit() else (1, value)
