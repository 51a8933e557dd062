"""``sabot plan``'s projection as people read it: what each row's cells would cost under
a model, the table fitted to the terminal (:mod:`pytest_sabot.report.terminal`), then the
totals and the seed cut. The numbers are :func:`pytest_sabot.gateway.projection.project`'s.
"""

from __future__ import annotations

from rich.console import Console

from pytest_sabot.core.model_spec import ModelSpec
from pytest_sabot.gateway.projection import SEED_CUT_TO, Plan, RowPlan
from pytest_sabot.report.terminal import Column, console, print_lines, print_table

COLUMNS: tuple[Column[RowPlan], ...] = (
    Column("row", lambda r: r.row, 1),
    Column("runs", lambda r: str(r.runs), 1, "right"),
    Column("calls", lambda r: f"{r.calls:.0f}", 2, "right"),
    Column("prompt tok", lambda r: f"{r.prompt_tokens:.0f}", 3, "right"),
    Column("compl tok", lambda r: f"{r.completion_tokens:.0f}", 3, "right"),
    Column("cost", lambda r: "no price" if r.cost_usd is None else f"${r.cost_usd:.2f}", 1,
           "right"),
)


def print_plan(out: Console, plan: Plan, model: ModelSpec | str) -> None:
    """The plan: its source and cap, the rows' table, the totals and the seed cut."""
    head = [f"plan for model {model} ({plan.source}); cap ${plan.cap_usd:.2f}"]
    if plan.ledger is not None:
        head.append(f"project spend so far ${plan.spent_usd:.2f} ({plan.ledger}); "
                    f"room left ${plan.room_usd:.2f}")
    print_lines(out, head, wrap=False)
    print_table(out, COLUMNS, plan.rows)
    total = "unknown (a model has no price)" if plan.cost_usd is None else f"${plan.cost_usd:.2f}"
    lines = [
        f"total: {plan.runs} runs, {plan.calls:.0f} calls, {total}, {plan.seeds} seeds per cell"
    ]
    if plan.cut:
        before = "" if plan.uncut_cost_usd is None else f" (${plan.uncut_cost_usd:.2f})"
        lines.append(
            f"projection with every seed{before} exceeded the room under the cap: seeds cut "
            f"to {SEED_CUT_TO} before any cell is cut (standard section 8); the totals above "
            f"are for the cut wave"
        )
        lines.append(f"run the cut wave with: {plan.seed_option}")
    if plan.over_cap:
        lines.append("STILL OVER THE CAP after the seed cut: do not run this wave live")
    if plan.cost_usd is None and getattr(model, "is_live", False):
        lines.append(f"NO PRICE for {model}: a live run of it is refused until "
                     "--sabot-prices FILE gives its price (USD per 1M input, cached input "
                     "and output tokens); give the same file to sabot plan")
    print_lines(out, lines, wrap=False)


def plan_lines(plan: Plan, model: ModelSpec | str, width: int | None = None) -> list[str]:
    """:func:`print_plan` as lines at ``width`` columns (the terminal's when None)."""
    out = console(width)
    with out.capture() as captured:
        print_plan(out, plan, model)
    return [line.rstrip() for line in captured.get().splitlines()]


__all__ = ["COLUMNS", "plan_lines", "print_plan"]
