"""What a selection of cells will cost before anything is spent (``sabot plan``, and a live
session before its first call: SPEC I52, I99).

The projection multiplies the runs of the selected matrix by calls per run and tokens per
call. Those per-run figures come from a recorded run directory when one is given (the
traces say exactly how many calls each framework x config made and how many tokens they
carried), otherwise from conservative figures each framework's adapter declares.

The cap is the project's (SPEC.md I51): what the output root's spend ledger already holds
is taken off it first. When the projection exceeds what is left, the standard's rule
applies (section 8, SPEC.md I52): seeds are cut from 5 to 3 before any cell is cut, keeping
the first three seeds of the wave's registry.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.core.frameworks import cost_per_run
from pytest_sabot.core.model_spec import ModelSpec, parse_model
from pytest_sabot.core.models.cells import Cell
from pytest_sabot.core.trace_io import TRACE_FILE, read_trace
from pytest_sabot.gateway.ledger import LEDGER_FILE, read_ledger
from pytest_sabot.gateway.prices import PriceTable

SEED_CUT_TO = 3


@dataclass(frozen=True)
class RowPlan:
    row: str
    runs: int
    calls: float
    prompt_tokens: float
    completion_tokens: float
    cost_usd: float | None


@dataclass(frozen=True)
class Plan:
    rows: list[RowPlan]
    runs: int
    calls: float
    prompt_tokens: float
    completion_tokens: float
    cost_usd: float | None
    cap_usd: float
    seeds: int
    source: str
    cut: bool = False
    spent_usd: float = 0.0  # already committed in the project's ledger
    ledger: str | None = None
    kept_seeds: tuple[int, ...] = ()  # the seeds to run (all of the selection's unless cut)
    uncut_cost_usd: float | None = None  # the projection before the cut

    @property
    def room_usd(self) -> float:
        """What the cap leaves for this wave."""
        return self.cap_usd - self.spent_usd

    @property
    def over_cap(self) -> bool:
        return self.cost_usd is not None and self.cost_usd > self.room_usd

    @property
    def seed_option(self) -> str:
        return "--sabot-seed=" + ",".join(str(s) for s in self.kept_seeds)


def per_run_from_recordings(
    out_dir: Path, wave: int | None = None
) -> dict[str, tuple[float, float, float]]:
    """Mean calls and tokens per run for each row, from the traces of a run recorded live
    (of ``wave``, when given). A folder that holds no recorded cell, a keyless recording
    (the embedded model's token counts are fixtures, not a model's) and another wave's are
    refused, naming the folder and what it holds."""
    traces = sorted((out_dir / "cells").glob(f"*/{TRACE_FILE}"))
    if not out_dir.is_dir() or not traces:
        raise SabotDataError(out_dir, "--from", "a recorded run directory (its "
                             f"cells/<cell id>/{TRACE_FILE})",
                             "no such directory" if not out_dir.is_dir() else "no recorded cell")
    calls: dict[str, list[int]] = defaultdict(list)
    prompt: dict[str, list[int]] = defaultdict(list)
    completion: dict[str, list[int]] = defaultdict(list)
    for trace_path in traces:
        trace = read_trace(trace_path)
        if trace.start.model.startswith("sim"):
            raise SabotDataError(trace_path, "--from", "a run recorded live (a keyless run's "
                                 "token counts are fixtures of the embedded model, not a "
                                 "model's: record a small live slice first)", trace.start.model)
        if wave is not None and trace.start.wave != wave:
            raise SabotDataError(trace_path, "--from", f"a recording of wave {wave}",
                                 f"wave {trace.start.wave}")
        row = f"{trace.start.framework}-{trace.start.config}"
        model_calls = trace.of_kind("model_call")
        calls[row].append(len(model_calls))
        prompt[row].extend(c.data.prompt_tokens or 0 for c in model_calls)
        completion[row].extend(c.data.completion_tokens or 0 for c in model_calls)
    result: dict[str, tuple[float, float, float]] = {}
    for row, counts in calls.items():
        n_calls = max(1, len(prompt[row]))
        result[row] = (
            sum(counts) / len(counts),
            sum(prompt[row]) / n_calls,
            sum(completion[row]) / n_calls,
        )
    return result


def project(
    cells: list[Cell],
    *,
    model: ModelSpec | str,
    prices: PriceTable,
    cap_usd: float,
    per_run: dict[str, tuple[float, float, float]] | None = None,
    source: str = "built-in estimates",
    ledger_dir: Path | None = None,
) -> Plan:
    """Project runs, calls, tokens and cost against what the project's cap leaves; cut
    seeds 5 -> 3 (the registry's first three) when the projection passes it."""
    model = parse_model(model)
    # Rough figures per run, each declared by its framework's adapter, used only for the rows
    # a recorded run does not cover.
    figures = {**cost_per_run(), **(per_run or {})}
    runnable = [c for c in cells if not c.carved_out]
    committed, ledger = 0.0, None
    if ledger_dir is not None and (ledger_dir / LEDGER_FILE).exists():
        committed, ledger = read_ledger(ledger_dir).committed_usd, str(ledger_dir / LEDGER_FILE)
    seeds = tuple(dict.fromkeys(c.seed for c in runnable))  # registry order
    extra = {"spent_usd": committed, "ledger": ledger, "kept_seeds": seeds}
    plan = Plan(**{**_project(runnable, model, prices, cap_usd, figures, source).__dict__, **extra})
    if plan.over_cap and len(seeds) > SEED_CUT_TO:
        kept = seeds[:SEED_CUT_TO]
        cut = _project(
            [c for c in runnable if c.seed in kept], model, prices, cap_usd, figures, source
        )
        return Plan(
            **{
                **cut.__dict__,
                **extra,
                "cut": True,
                "kept_seeds": kept,
                "uncut_cost_usd": plan.cost_usd,
            }
        )
    return plan


def _project(
    cells: list[Cell],
    model: ModelSpec,
    prices: PriceTable,
    cap_usd: float,
    figures: dict[str, tuple[float, float, float]],
    source: str,
) -> Plan:
    runs: dict[str, int] = defaultdict(int)
    for cell in cells:
        runs[cell.row] += 1
    price = prices.price(model.name)
    rows: list[RowPlan] = []
    for row in sorted(runs):
        n_calls, p_tok, c_tok = figures.get(row, (10, 3000, 400))
        calls = runs[row] * n_calls
        prompt, completion = calls * p_tok, calls * c_tok
        cost = None
        if model.costs_nothing:
            cost = 0.0
        elif price is not None:
            cost = (prompt * price.input + completion * price.output) / 1e6
        rows.append(RowPlan(row, runs[row], calls, prompt, completion, cost))
    costs = [r.cost_usd for r in rows]
    total_cost = None if any(c is None for c in costs) else sum(c or 0.0 for c in costs)
    return Plan(
        rows=rows,
        runs=sum(runs.values()),
        calls=sum(r.calls for r in rows),
        prompt_tokens=sum(r.prompt_tokens for r in rows),
        completion_tokens=sum(r.completion_tokens for r in rows),
        cost_usd=total_cost,
        cap_usd=cap_usd,
        seeds=len({c.seed for c in cells}),
        source=source,
    )


__all__ = ["SEED_CUT_TO", "Plan", "RowPlan", "per_run_from_recordings", "project"]
