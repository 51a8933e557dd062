"""results.json: the versioned record of a scored wave, and how it is built from a run
directory. Every number in RESULTS.md and the terminal summary is read from this file.

results.json describes the last session that ran cells in its directory: the cells it
selected, the baselines its selection pulled in, and which records it counted. It is
always recomputable from the directory (``sabot rescore DIR`` builds it again from the
records and compares). A session that did not finish says so: ``selection.complete`` is
false and every selected cell without a record is listed under ``selection.not_run`` with
the reason (interrupted, budget, crashed worker, output unwritable, ...).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from pytest_sabot import __version__
from pytest_sabot.core.frameworks import installed_versions, off_pin
from pytest_sabot.core.model_spec import ModelSpec, downgrade_target, parse_judge, parse_model
from pytest_sabot.core.models.base import StrictModel
from pytest_sabot.core.models.cells import Cell
from pytest_sabot.core.models.defects import PublishedDefect
from pytest_sabot.core.models.outside import OutsideRow
from pytest_sabot.core.models.states import NotRunReason, SessionStatus
from pytest_sabot.core.models.verdict import BaselineVerdict, CellVerdict
from pytest_sabot.core.operators import served_model
from pytest_sabot.core.records import cell_dir
from pytest_sabot.core.trace_io import read_trace, write_json_atomic
from pytest_sabot.matrix.standard import Standard
from pytest_sabot.results.adjudicate import Provenance, Record, Scored, read_record, score_dir
from pytest_sabot.results.lab_gates import LabGates, lab_gates
from pytest_sabot.results.model_calls import ModelCalls, model_calls
from pytest_sabot.scoring import Scoreboard, scoreboard

RESULTS_SCHEMA_VERSION = "2"
RESULTS_FILE = "results.json"
# Where a session's own board goes when it is not its directory's (SPEC I97, I98): a slice
# beside a whole wave under slices/<run id>/, a reading under other rules under
# readings/<rules>/. Their cell records are the directory's.
SLICES_DIR = "slices"
READINGS_DIR = "readings"
FIXTURE_LABEL = "keyless: fixtures of the embedded model ({model}), not a measurement of any LLM"
JUDGE_PIN = "claude-cli"  # standard section 6: Claude, run headless via claude -p

DEFAULT_UPSTREAM = "https://api.openai.com/v1"

GATEWAY_UPSTREAM = "standalone gateway "
"""results.json's ``upstream`` of a session that ran through ``--sabot-gateway-url``: this
prefix, then the gateway's origin (never its secret)."""


def model_label(
    model: ModelSpec | str, upstream: str | None = None, off_pin_model: str | None = None
) -> str:
    """How results of a model are labelled wherever they are shown. A live model reached
    through another OpenAI-compatible server is named with that server: its numbers
    measure what that server answered, not the provider's model of the same name. A model
    other than the standard's pin says so in the label (SPEC I47)."""
    spec = parse_model(model)
    if spec.is_sim:
        return FIXTURE_LABEL.format(model=model)
    if spec.is_local:
        label = (
            f"local model {spec.local_model} as served by {spec.local_url} (no key, no "
            "spend; a measurement of that server's model, not of the standard's pin)"
        )
    elif spec.is_replay:
        label = (
            f"replay of recorded exchanges ({model}): no model was called; the numbers "
            "are those of the recorded run, labelled as that run was"
        )
    elif upstream and upstream.startswith(GATEWAY_UPSTREAM):  # --sabot-gateway-url
        label = (
            f"live model {model} through the {upstream}: its upstream, spend and recordings "
            "are that gateway's, not this session's"
        )
    elif upstream and upstream.rstrip("/") != DEFAULT_UPSTREAM:
        label = f"live model {model} as served by {upstream} (not the provider's own endpoint)"
    else:
        label = f"live model {model}"
    if off_pin_model:
        label += f" (OFF-PIN: {off_pin_model})"
    return label


_SNAPSHOT = re.compile(r"-\d{4}-\d{2}-\d{2}$")


def _family(name: str) -> str:
    return _SNAPSHOT.sub("", name.strip().lower())


def served_models(out_dir: Path, cell_ids: Iterable[str]) -> tuple[set[str], set[str]]:
    """Models that answered the recorded calls of these cells: (pipeline, downgraded)."""
    pipeline: set[str] = set()
    downgraded: set[str] = set()
    for cid in cell_ids:
        run_dir = cell_dir(out_dir, cid)
        if not (run_dir / "events.jsonl").is_file():
            continue
        for event in read_trace(run_dir).of_kind("model_call"):
            if event.data.error is not None:
                continue
            (downgraded if event.data.downgraded else pipeline).add(event.data.model_served)
    return pipeline, downgraded


def model_off_pin(
    std: Standard,
    model: ModelSpec | str,
    downgrade_model: str | None,
    judge_spec: str,
    served: tuple[set[str], set[str]] | None = None,
    o4: bool = True,
) -> dict[str, str]:
    """Models that differ from the standard's pins (SPEC I47): the pipeline model, the O4
    downgrade target and the judge. Keyless runs measure no model, are labelled fixtures
    everywhere, and are never called off-pin; a replay is judged by the models its
    recorded calls were served by."""
    spec = parse_model(model)
    if spec.is_sim:
        return {}
    pin, pin_down = std.wave.pipeline_model, std.wave.downgrade_model
    found: dict[str, str] = {}
    if spec.is_replay:
        pipeline, down = served or (set(), set())
        odd = sorted(m for m in pipeline if _family(m) != _family(pin))
        if odd:
            found["pipeline model"] = f"replayed calls served by {', '.join(odd)}, pinned {pin}"
        odd_down = sorted(m for m in down if _family(m) != _family(pin_down))
        if odd_down:
            found["O4 downgrade model"] = (
                f"replayed calls served by {', '.join(odd_down)}, pinned {pin_down}"
            )
    else:
        name = spec.local_model if spec.is_local else spec.name
        if _family(name) != _family(pin):
            found["pipeline model"] = f"{model}, pinned {pin}"
        target = downgrade_model or pin_down
        if o4 and _family(downgrade_target(target, spec).name) != _family(pin_down):
            found["O4 downgrade model"] = f"{target}, pinned {pin_down}"
    if parse_judge(judge_spec).scheme != JUDGE_PIN:
        found["judge"] = (
            f"{judge_spec}, the standard's judge is Claude run headless (claude -p)"
            if judge_spec != "none"
            else "none (no soft tier), the standard's judge is Claude run headless (claude -p)"
        )
    return found


class NotRunCell(StrictModel):
    """A selected cell (or a baseline the selection pulled in) that has no record."""

    cell_id: str
    reason: NotRunReason = Field(description="Why it has no record.")
    detail: str = Field("", description="More words, e.g. the error that stopped the session.")


class UnpairedCell(StrictModel):
    """A recorded fault cell that is not scored because its baseline is not usable."""

    cell_id: str
    reason: str = Field(description="Why its baseline cannot validate it.")


class Selection(StrictModel):
    registered: int = Field(description="Cells in the wave's registry (carve-outs included).")
    selected: int = Field(description="Runnable cells this session selected.")
    cell_ids: list[str] = Field(
        default_factory=list,
        description="Every cell the session selected (carve-outs included), registry order.",
    )
    pulled_in: list[str] = Field(
        default_factory=list,
        description="Baselines outside the selection that selected fault cells pair with "
        "(run or reused from an earlier record, SPEC I41).",
    )
    keyword: str | None = Field(None, description="The -k expression, if any.")
    markexpr: str | None = Field(None, description="The -m expression, if any.")
    filters: dict[str, list[str]] = Field(
        default_factory=dict, description="The --sabot-* cell filters given."
    )
    recorded: int = Field(description="Selected runnable cells with a counted record.")
    missing: list[str] = Field(default_factory=list, description="Selected, not recorded.")
    not_run: list[NotRunCell] = Field(
        default_factory=list,
        description="Every selected or pulled-in cell without a record, with the reason.",
    )
    unpaired: list[UnpairedCell] = Field(
        default_factory=list,
        description="Recorded fault cells outside every denominator: no usable baseline.",
    )
    complete: bool = Field(description="Every selected and pulled-in cell has a record.")


class Disclosure(StrictModel):
    """A defect the standard disclosed for the published instrument, reproduced by this
    wave (cells/published-defects.yaml, SPEC I86); every report shows it with the
    standard's sensitivity bound, and the scoreboard's ``sensitivity`` reads the board
    without the defect's task beside it."""

    id: str = Field(description="The registry's id of the defect.")
    disclosed: str = Field(description="The amendment that disclosed it.")
    task: str = Field(description="The task whose runs it touches.")
    description: str = Field(description="What the defect is, in words.")
    bound: str = Field(description="The standard's sensitivity bound, in its words.")
    published_median: float = Field(description="The published headline median.")
    published_median_without: float = Field(
        description="The published headline median without the defect's task."
    )
    records: int = Field(0, description="Scored records (fault and baseline) of the task.")
    served: int = Field(
        0, description="Of them, runs whose trace records the section as handed over."
    )
    not_served: int = Field(
        0, description="Runs whose trace records the materials without the section."
    )

    @property
    def unrecorded(self) -> int:
        """Records that say nothing of the materials (older traces, cells never run)."""
        return self.records - self.served - self.not_served


class SessionInfo(StrictModel):
    """The session whose selection these results describe."""

    run_id: str = Field(description="The session's run id (sessions/<run id>.json).")
    mode: Literal["fresh", "resume"] = Field(description="A fresh session or a resumed one.")
    rerun_errors: bool = Field(
        False, description="--sabot-rerun-errors: recorded RUN_ERROR cells were run again."
    )
    rerun_error_cells: list[str] = Field(
        default_factory=list,
        description="Cells whose recorded RUN_ERROR was set aside and run again (SPEC I19).",
    )
    status: SessionStatus = Field(description="How the session ended.")
    detail: str = Field("", description="What ended it, in words.")
    started: str = Field(description="Start (UTC, ISO 8601).")
    ended: str | None = Field(None, description="End (UTC, ISO 8601).")


class SessionGate(StrictModel):
    """One of the session's gates as it ended (SPEC I43): a row's ``--sabot-fail-under``,
    the share of RUN_ERROR cells, the baselines a gated row stands on."""

    name: str = Field(description="A row, or 'run-errors' / 'baselines'.")
    passed: bool
    message: str = Field(description="What was checked, with the figures.")


class ResultsFile(StrictModel):
    """Everything a scored wave published: cells with their acts and evidence, rows, and
    what it ran on."""

    schema_version: str = Field(RESULTS_SCHEMA_VERSION, description="Format version.")
    tool: str = Field(description="pytest-sabot version that wrote the file.")
    wave: int
    rules: str = Field(description="Rule version the verdicts are adjudicated under.")
    wave_rules: str = Field(description="Rule version the wave is registered under.")
    model: str = Field(description="Pipeline model spec, e.g. 'sim:realistic'.")
    downgrade_model: str | None = Field(
        None, description="O4 downgrade model named for live runs (None: the wave's pin)."
    )
    judge_spec: str = Field("sim", description="The soft-tier judge as given (--sabot-judge).")
    upstream: str | None = Field(None, description="A non-default upstream base URL, if any.")
    fixture: bool = Field(description="True when the embedded model served (keyless).")
    label: str = Field(description="How these numbers must be described.")
    registration_hash: str = Field(description="sha256 of the cells/tasks/mappings used.")
    versions: dict[str, str] = Field(description="Installed framework versions.")
    off_pin: dict[str, str] = Field(
        description="Packages and models not at the standard's pins (SPEC I47)."
    )
    session: SessionInfo | None = Field(None, description="The session, when one ran.")
    selection: Selection
    disclosures: list[Disclosure] = Field(
        default_factory=list,
        description="Disclosed defects of the published instrument this wave reproduces "
        "(SPEC I86), each with the standard's sensitivity bound.",
    )
    scoreboard: Scoreboard
    cells: list[Annotated[CellVerdict | BaselineVerdict, Field(discriminator="kind")]]
    structural_zeros: list[str] = Field(description="Registered carve-out cells, never run.")
    counted: dict[str, str] = Field(
        default_factory=dict,
        description="Cell id -> run id of the session whose record was scored, for every "
        "verdict (and unpaired cell); sabot rescore reads exactly these records.",
    )
    judge: dict[str, Any] | None = Field(None, description="Soft-tier judge summary.")
    spend: dict[str, Any] | None = Field(None, description="Gateway spend and call counts.")
    model_calls: ModelCalls | None = Field(
        None,
        description="Keyless only: calls the embedded model recognised and refused, per row "
        "and for the session (SPEC I151); None for a live or replayed session.",
    )
    flags_protocol: bool | None = Field(
        None,
        description="Whether the wave's pipelines were given the FLAGS addendum (standard "
        "section 10), so its detection surfaces are read; None in a file written before "
        "the field existed (then read from the rule version, v0.2.0 and later).",
    )
    outside_row: OutsideRow | None = Field(
        None,
        description="The one row of a pipeline outside the harness that replaced the "
        "wave's rows (a trusted local agent's, with the callable that ran; an MCP "
        "client's); absent from the file for a wave of framework adapters.",
    )
    lab_gates: LabGates | None = Field(
        None,
        description="A lab matrix only: the lab gate per row and fault beside the funnel "
        "(results/lab_gates.py); absent from the file for every other wave.",
    )
    gates: list[SessionGate] | None = Field(
        None,
        description="The gates the session reported (SPEC I43: asked for with "
        "--sabot-fail-under, or a RUN_ERROR share over --sabot-max-run-errors), passed or "
        "failed, as its exit status read them; absent from the file when none was reported "
        "(sabot rescore and sabot export carry them over as recorded).",
    )
    extensions: dict[str, Any] = Field(
        default_factory=dict,
        description="Fields other plugins added through the pytest_sabot_results_json hook, "
        "one key per plugin; kept as they were written (sabot rescore carries them over).",
    )

    @property
    def partial_reasons(self) -> list[str]:
        """Why this board is not the wave's (SPEC I41, I44): a slice of the registry, selected
        cells not run, fault cells unpaired. Their cells are outside every denominator and
        outside the three exclusion codes, so a board with any of them is partial and its
        rates are never the wave's. Empty for a whole board."""
        sel = self.selection
        reasons = []
        covered = sel.selected + len(self.structural_zeros)
        if covered < sel.registered:
            reasons.append(f"a slice, {covered:,} of the {sel.registered:,} registered cells")
        if sel.not_run:
            reasons.append(f"{len(sel.not_run):,} cell(s) not run")
        if sel.unpaired:
            reasons.append(f"{len(sel.unpaired):,} fault cell(s) unpaired")
        return reasons

    @property
    def short_median(self) -> str | None:
        """'N of M rows in the median' when fewer rows enter the median than the matrix
        registers (a row with no valid fault run): the median is no wave's either (I91).
        None otherwise, and for files written before ``registered_rows`` existed."""
        board = self.scoreboard
        if board.registered_rows is None or board.median_rows >= board.registered_rows:
            return None
        return f"{board.median_rows} of {board.registered_rows} rows in the median"

    @property
    def status_line(self) -> str | None:
        """'incomplete: X of Y selected recorded (why)' when the selection did not finish."""
        sel = self.selection
        if sel.complete:
            return None
        why = ""
        reasons = sorted({n.reason for n in sel.not_run})
        if reasons:
            why = f" ({', '.join(reasons)})"
        return f"incomplete: {sel.recorded:,} of {sel.selected:,} selected recorded{why}"


def acceptance(
    provenance: Provenance | None,
    session: SessionInfo | None,
    pulled_in: Iterable[str] = (),
    downgrade_model: str | None = None,
    counted: dict[str, str] | None = None,
) -> Any:
    """Which records a session counts: records of its own provenance, made by itself, kept
    by it (resume), or reused as pulled-in baselines. Without a session every record of
    the provenance counts (a directory scored offline). ``counted`` (results.json's own
    list, when it is rebuilt) names exactly the records to read."""
    pulled = set(pulled_in)

    def accept(cell: Cell, record: Record) -> bool:
        if counted is not None and counted.get(cell.id) != record.session:
            return False
        if provenance is not None:
            mine = record.provenance
            if mine is None or provenance.difference(mine) is not None:
                return False
            if (
                served_model(cell.operator)
                and record.outcome is not None
                and record.outcome.downgrade_model is not None
                and downgrade_model is not None
                and record.outcome.downgrade_model != downgrade_model
            ):
                return False
        if session is None or session.mode == "resume" or cell.id in pulled:
            return True
        return record.session == session.run_id

    return accept


def build_results(
    std: Standard,
    out_dir: Path,
    *,
    selected_ids: list[str] | None = None,
    pulled_in: Iterable[str] = (),
    model: ModelSpec | str,
    upstream: str | None = None,
    downgrade_model: str | None = None,
    judge_spec: str = "sim",
    judge: dict[str, Any] | None = None,
    spend: dict[str, Any] | None = None,
    extensions: dict[str, Any] | None = None,
    session: SessionInfo | None = None,
    provenance: Provenance | None = None,
    not_run: dict[str, tuple[NotRunReason, str]] | None = None,
    counted: dict[str, str] | None = None,
    keyword: str | None = None,
    markexpr: str | None = None,
    filters: dict[str, list[str]] | None = None,
    versions: dict[str, str] | None = None,
    processes: int | None = 1,
) -> ResultsFile:
    """Score every counted record of the selection (and the baselines it pulled in) and
    assemble results.json. ``versions`` are the installed packages the records were made
    with (a rebuild carries the original's; by default, those installed here).
    ``processes`` spreads the reading of the records over forked processes (None: one per
    core; ``score_dir``); the file is the same whatever it is."""
    spec = parse_model(model)
    wanted = None if selected_ids is None else set(selected_ids)
    chosen = std.cells if wanted is None else [c for c in std.cells if c.id in wanted]
    ids = {c.id for c in chosen}
    # Every scored fault cell stands beside its baseline in the results (SPEC I41).
    needed = {c.baseline_id for c in chosen if not c.carved_out and not c.is_baseline}
    pulled = sorted((set(pulled_in) | needed) - ids)
    extra = [std.cell(cid) for cid in pulled]
    runnable = [c for c in chosen if not c.carved_out]
    accept = acceptance(provenance, session, pulled, downgrade_model, counted)
    scored = score_dir(std, out_dir, [*runnable, *extra], accept, processes=processes)
    used = dict(scored.sessions)
    for cid in scored.unpaired:
        record = read_record(out_dir, cid)
        used[cid] = record.session
    carved = [c for c in chosen if c.carved_out]
    versions = installed_versions() if versions is None else dict(versions)
    reasons = not_run or {}
    not_run_cells = [
        NotRunCell(
            cell_id=cid,
            reason=reasons[cid][0] if cid in reasons else _default_reason(cid, scored),
            detail=reasons[cid][1] if cid in reasons else _default_detail(cid, scored),
        )
        for cid in scored.missing
    ]
    missing_selected = [cid for cid in scored.missing if cid not in set(pulled)]
    served = (
        served_models(out_dir, scored.sessions) if spec.is_replay else None
    )
    o4 = any(served_model(c.operator) for c in runnable)
    pins = {
        **off_pin(versions),
        **model_off_pin(std, spec, downgrade_model, judge_spec, served, o4),
    }
    return _no_band_unless_whole(ResultsFile(
        tool=f"pytest-sabot {__version__}",
        wave=std.wave.wave,
        rules=std.rules.version,
        wave_rules=std.wave.rules,
        model=spec.given,
        downgrade_model=downgrade_model,
        judge_spec=judge_spec,
        upstream=upstream,
        fixture=spec.is_sim,
        label=model_label(spec, upstream, pins.get("pipeline model")),
        registration_hash=std.registration_hash(),
        versions=versions,
        off_pin=pins,
        session=session,
        selection=Selection(
            registered=len(std.cells),
            selected=len(runnable),
            cell_ids=[c.id for c in chosen],
            pulled_in=pulled,
            keyword=keyword,
            markexpr=markexpr,
            filters=filters or {},
            recorded=len(runnable) - len(missing_selected),
            missing=missing_selected,
            not_run=not_run_cells,
            unpaired=[
                UnpairedCell(cell_id=k, reason=v) for k, v in sorted(scored.unpaired.items())
            ],
            complete=not scored.missing,
        ),
        disclosures=[_disclosure(d, scored.verdicts) for d in std.defects],
        scoreboard=scoreboard(
            scored.verdicts,
            carve_outs=carved,
            registered_rows=len({(c.framework, c.config) for c in std.cells}),
            sensitivity_tasks=[d.task for d in std.defects],
        ),
        cells=scored.verdicts,
        structural_zeros=[c.id for c in carved],
        counted=dict(sorted(used.items())),
        judge=judge,
        spend=spend,
        model_calls=(
            model_calls(
                out_dir, [(cid, std.cell(cid).row) for cid in sorted(used)], processes,
                known=scored.tallies,
            )
            if spec.is_sim
            else None
        ),
        flags_protocol=std.wave.flags_protocol,
        outside_row=std.outside,
        lab_gates=(
            lab_gates(out_dir, scored.verdicts, std.wave.operators) if std.wave.lab else None
        ),
        extensions=extensions or {},
    ))


def _no_band_unless_whole(results: ResultsFile) -> ResultsFile:
    """SPEC I91: the section 7 band is read on the whole scoreboard only. A partial board
    (a slice, cells not run or unpaired, fewer rows in the median than registered) keeps
    its median and has no band, in results.json as in every report."""
    board = results.scoreboard
    if board.band is None or not (results.partial_reasons or results.short_median):
        return results
    return results.model_copy(update={"scoreboard": board.model_copy(update={"band": None})})


def _disclosure(
    defect: PublishedDefect, verdicts: Iterable[CellVerdict | BaselineVerdict]
) -> Disclosure:
    """A registered defect with what these records show of it: how many of the task's runs
    their traces say were handed the section (SPEC I86)."""
    mine = [v.served_ground_truth for v in verdicts
            if v.task == defect.task and not _skipped(v)]
    return Disclosure(
        id=defect.id, disclosed=defect.disclosed, task=defect.task,
        description=defect.description, bound=defect.sensitivity.text,
        published_median=defect.sensitivity.published_median,
        published_median_without=defect.sensitivity.median_without,
        records=len(mine), served=sum(1 for s in mine if s is True),
        not_served=sum(1 for s in mine if s is False),
    )


def _skipped(v: CellVerdict | BaselineVerdict) -> bool:
    """A fault cell never run because its baseline had failed (I15): it has no trace."""
    return (
        isinstance(v, CellVerdict) and v.served_ground_truth is None
        and v.excluded is not None and v.excluded.code == "BASELINE_FAIL"
        and v.injection_seq is None and not v.acts
    )


def _default_reason(cell_id: str, scored: Scored) -> NotRunReason:
    if cell_id in scored.damaged:
        return "damaged record"
    return "budget" if cell_id in scored.stopped else "not reached"


def _default_detail(cell_id: str, scored: Scored) -> str:
    return (
        scored.damaged.get(cell_id)
        or scored.stopped.get(cell_id)
        or scored.unfinished.get(cell_id, "")
    )


def write_results(results: ResultsFile, out_dir: Path) -> Path:
    path = out_dir / RESULTS_FILE
    # A wave of framework adapters that is not a lab matrix writes exactly the fields it
    # always wrote.
    skip = {name for name in ("lab_gates", "outside_row", "gates")
            if getattr(results, name) is None}
    write_json_atomic(path, results.model_dump(mode="json", exclude=skip or None))
    return path


def read_results(path: Path) -> ResultsFile:
    if path.is_dir():
        path = path / RESULTS_FILE
    return ResultsFile.model_validate_json(path.read_text(encoding="utf-8"))
