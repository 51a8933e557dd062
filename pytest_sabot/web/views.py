"""The runs list: every run of the history with the facts its filters read, and the
filters themselves. Pure functions over :class:`~pytest_sabot.history.RunSummary` (the
rows ``sabot history`` lists); nothing here counts or scores."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_sabot.history import RunSummary

LABELS = ("keyless", "live", "replay")
FILTERS = ("kind", "wave", "framework", "model", "label", "since", "until")


def label_of(run: RunSummary) -> str:
    """keyless (fixtures of the embedded model or a scripted controller), replay (answers
    read back from recorded exchanges) or live (a real model or agent)."""
    if run.fixture:
        return "keyless"
    if (run.model or "").startswith("replay"):
        return "replay"
    return "live"


@dataclass(frozen=True)
class RunRow:
    """One line of the runs list."""

    run: RunSummary
    label: str
    frameworks: list[str]
    date: str  # YYYY-MM-DD of its start ('' when unknown)

    @property
    def href(self) -> str:
        return f"/run/{self.run.run_id}"


@dataclass(frozen=True)
class RunsView:
    rows: list[RunRow]
    total: int
    filters: dict[str, str]
    choices: dict[str, list[str]] = field(default_factory=dict)


def rows_of(runs: Iterable[RunSummary], frameworks: Mapping[str, list[str]]) -> list[RunRow]:
    return [
        RunRow(run=r, label=label_of(r), frameworks=list(frameworks.get(r.run_id, [])),
               date=(r.started or "")[:10])
        for r in runs
    ]


def wanted(row: RunRow, filters: Mapping[str, str]) -> bool:
    """Whether a run passes every filter given (an empty value filters nothing)."""
    checks: dict[str, Callable[[str], bool]] = {
        "kind": lambda v: row.run.kind == v,
        "wave": lambda v: str(row.run.wave) == v,
        "framework": lambda v: v in row.frameworks,
        "model": lambda v: v.lower() in (row.run.model or "").lower(),
        "label": lambda v: row.label == v,
        "since": lambda v: bool(row.date) and row.date >= v,
        "until": lambda v: bool(row.date) and row.date <= v,
    }
    return all(checks[k](v) for k, v in filters.items() if k in checks and v)


def runs_view(rows: list[RunRow], filters: Mapping[str, str]) -> RunsView:
    """The runs that pass the filters, newest first (the history's order), and the values
    each select offers (those the runs have)."""
    given = {k: filters.get(k, "").strip() for k in FILTERS}
    choices = {
        "kind": sorted({r.run.kind for r in rows}),
        "wave": sorted({str(r.run.wave) for r in rows if r.run.wave is not None}, key=int),
        "framework": sorted({f for r in rows for f in r.frameworks}),
        "label": [x for x in LABELS if any(r.label == x for r in rows)],
        "model": sorted({r.run.model for r in rows if r.run.model}),
    }
    return RunsView(rows=[r for r in rows if wanted(r, given)], total=len(rows),
                    filters=given, choices=choices)


def opening_path(newest: RunSummary | None) -> str:
    """Where the URL ``sabot serve`` prints opens: the run recorded last (right after
    README's first command, the wave just run), else the runs list."""
    return "/" if newest is None else f"/run/{newest.run_id}"


def opening_words(newest: RunSummary | None) -> str:
    """The line under the URL that says where it opens."""
    if newest is None:
        return "it opens on the runs list (no run is recorded yet)"
    what = (f"lab run {newest.run_id}" if newest.kind == "lab" else
            f"run {newest.run_id}" + (f", wave {newest.wave}" if newest.wave is not None
                                      else "") + (f", {newest.model}" if newest.model else ""))
    return f"it opens on the newest run ({what}); Runs, at the top, lists every run"


def score_key(row: Any) -> tuple[bool, float, str]:
    """A scoreboard row's place when rows are listed lowest Sabot Score first (its
    published value; rows without one last)."""
    value = (row.data.get("sabot_score") or {}).get("value")
    number = value if isinstance(value, int | float) else 0.0
    return (not isinstance(value, int | float), float(number), str(row.name))


def why_text(cell: Any) -> str:
    """One sentence on why a cell has its verdict, from its verdict and its trace's own
    events (what the page below shows in full)."""
    if cell.not_run:
        return f"Not run: {cell.not_run.get('reason', '')}"
    excluded = cell.excluded
    if excluded:
        return f"Excluded ({excluded.get('code')}): {excluded.get('reason', '')}"
    if cell.kind == "baseline":
        return ("The no-fault baseline: the task ran with nothing planted; its fault cells "
                "count only when it passed.")
    v = cell.verdict
    where = (f"The fault was planted at seq {cell.injection.seq} ({cell.injection.summary})"
             if cell.injection else "The fault was planted")
    probe = ""
    if cell.probe is not None:
        landed = "landed" if cell.probe.data.get("landed") else "did not land"
        probe = f"; the landing probe says it {landed}"
    detection = str(v.get("detection"))
    if detection == "DETECTED_HARD":
        act = next((a for a in cell.acts if a.get("seq") == v.get("detecting_seq")), None)
        what = (f"{act.get('act')} by {act.get('component')} at seq {act.get('seq')}"
                if act else "an act the mapping counts")
        return f"{where}{probe}. Detected at the hard tier: {what}."
    after = [w for w in cell.words if w.after_injection]
    said = ("what the own checks said after it is quoted below" if after
            else "no own check said anything after it")
    acts = ("the own checks' mapped acts came before the injection or are not counted"
            if cell.acts else "nothing the pipeline's own checks did is an act the mapping "
            "counts (a reject, a retry with a reason, an escalation, a block, an anchored "
            "FLAGS line)")
    if detection == "DETECTED_SOFT":
        return (f"{where}{probe}. Soft tier only: {acts}; the judge read a component "
                "saying something was off (its quote is below).")
    soft = ("the judge found no soft notice either" if v.get("soft_judged")
            else "it was not judged")
    return (f"{where}{probe}. Missed: {acts}; {said}; "
            f"{soft}.")
