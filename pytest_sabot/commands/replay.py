"""``sabot replay CELL_DIR``: run a recorded cell again with no model behind it (its
recorded exchanges answer every call) and say whether the run reproduced.

A cell's record is ``<out>/cells/<cell id>/`` (its trace events.jsonl and outcome.json);
the exchanges of a live run are ``<out>/recordings/<cell id>/exchanges.jsonl``. The replay
runs the cell's real pipeline once, in a directory of its own (``--out``, else a temporary
one), through an in-process gateway whose only backend is ``replay:<out>/recordings``:
no provider, no key, no spend. Then (SPEC I77):

* the replayed trace is compared with the recorded one, event by event, leaving out only
  what a replay cannot reproduce (wall-clock times, the configured model's name, the
  price of a call, the attempt number); the first event that differs is named with its
  agent, the agent's model call it belongs to, and the first field that differs;
* a call the recording cannot answer (another request than recorded, a call never
  recorded) stops the replayed run; the gateway's message names the cell, the agent, the
  call index and the first part of the request that differs;
* the replayed run is scored exactly as the original (the same rules and mapping; the
  soft tier reads the original judge's verdict, the judge is not asked again), and the
  verdicts must be equal.

All of it holds: ``reproduction: verified``; anything else: ``diverged`` with the first
difference. One replay rule (SPEC I143), as the lab's own ``sabot lab replay`` has it: exit
0 verified, 1 diverged, 2 bad input, 3 no recording to replay. The report always names the
original verdict and gate (a verified replay of a failed run is a failed run reproduced,
never a pass). The original record is only read.

A lab run (a directory holding run.json, or a run.json itself) is replayed by the lab's own
replay (docs/LAB.md), under the same rule.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from pytest_sabot.commands.failure import fail
from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.core.exit_codes import EXIT_GATE, EXIT_INCONCLUSIVE, EXIT_PASS
from pytest_sabot.core.models.base import StrictModel
from pytest_sabot.core.models.verdict import BaselineVerdict, CellVerdict
from pytest_sabot.core.records import OUTCOME_FILE, RunOutcome
from pytest_sabot.core.trace_io import read_trace
from pytest_sabot.gateway.backends.replay import first_difference
from pytest_sabot.gateway.recording import EXCHANGES_FILE, PARTIAL_SUFFIX, read_recording

RECORDINGS_DIR = "recordings"
CELLS_DIR = "cells"
SOFT_FILE = "soft.json"
Reproduction = Literal["verified", "diverged"]

# What a replay cannot reproduce, by event kind: left out of the comparison (SPEC I77).
NOT_REPRODUCIBLE: dict[str, tuple[str, ...]] = {
    "run_start": ("model", "attempt"),
    "model_call": ("latency_ms", "cost_usd"),
}
NOT_REPRODUCIBLE_TEXT = (
    "left out of the comparison: each event's time, model-call latency and price, and the "
    "run's configured model name and attempt number (a replay is served by its recording or "
    "the embedded model, spends nothing and runs once)"
)

if TYPE_CHECKING:
    from pytest_sabot.matrix.standard import Standard


class Difference(StrictModel):
    """The first place the replay parted from the recording."""

    seq: int | None = Field(description="Trace position of the first differing event.")
    agent: str = Field(description="The component the event belongs to (worker, reviewer...).")
    call: int | None = Field(
        description="That agent's model call the event is (a model_call) or follows."
    )
    kind: str = Field(description="The recorded event's kind (or the replay's, if longer).")
    what: str = Field(description="What differs, in words.")


class Gate(StrictModel):
    """The original cell's gate: the task's pass criterion on its final artifact, and
    whether it ran at all."""

    outcome: Literal["pass", "fail"]
    reason: str


class ReplayReport(StrictModel):
    """What ``sabot replay`` found (its ``--json`` output)."""

    cell_id: str
    cell_dir: str = Field(description="The original record, only read.")
    recording: str = Field(description="The exchanges that answered the replay's calls.")
    reproduction: Reproduction
    difference: Difference | None = Field(description="The first difference, when diverged.")
    original_verdict: str = Field(description="The original record's verdict word.")
    original_funnel: str = Field(description="Its whole funnel path (or exclusion).")
    replayed_verdict: str | None = Field(description="The replayed run's verdict word.")
    gate: Gate = Field(description="The original run's gate (never the replay's).")
    exit_code: int
    events: int = Field(description="Events in the recorded trace.")
    replayed_events: int = Field(description="Events in the replayed trace.")
    calls: int = Field(description="Recorded model calls.")
    replay_dir: str | None = Field(description="The replay's own record, when kept (--out).")
    compared: str = Field(NOT_REPRODUCIBLE_TEXT, description="What the comparison leaves out.")
    notes: list[str] = Field(default_factory=list)


# --------------------------------------------------------------------------- locating


def _cell_paths(cell_dir: Path) -> tuple[str, Path, Path]:
    """(cell id, output directory, recording file) of ``<out>/cells/<cell id>``."""
    cell_dir = Path(cell_dir)
    expected = "a cell's record: <out>/cells/<cell id>, holding events.jsonl and outcome.json"
    if not cell_dir.is_dir():
        raise SabotDataError(cell_dir, "", expected, "no such directory")
    if cell_dir.resolve().parent.name != CELLS_DIR:
        raise SabotDataError(cell_dir, "", expected, f"a directory not under {CELLS_DIR}/")
    for name in ("events.jsonl", "outcome.json"):
        if not (cell_dir / name).is_file():
            raise SabotDataError(cell_dir, name, expected, f"no {name} (the cell never finished)")
    out_dir = cell_dir.resolve().parent.parent
    folder = out_dir / RECORDINGS_DIR / cell_dir.name
    recording = folder / EXCHANGES_FILE
    if not recording.is_file() and (folder / (EXCHANGES_FILE + PARTIAL_SUFFIX)).is_file():
        recording = folder / (EXCHANGES_FILE + PARTIAL_SUFFIX)
    return cell_dir.name, out_dir, recording


def _read_outcome(cell_dir: Path) -> RunOutcome:
    from pydantic import ValidationError

    from pytest_sabot.core.errors import from_validation_error

    path = cell_dir / "outcome.json"
    try:
        return RunOutcome.model_validate_json(path.read_text(encoding="utf-8"))
    except ValidationError as exc:
        raise from_validation_error(path, exc) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SabotDataError(path, "", "outcome.json of a cell", str(exc)) from None


def gate_of(outcome: RunOutcome) -> Gate:
    """The original run's gate: a run error or a budget stop fails it; otherwise the
    task's pass criterion on the final artifact decides (SPEC I78)."""
    if outcome.error is not None:
        return Gate(outcome="fail", reason=f"run error: {outcome.error}")
    if outcome.stopped is not None:
        return Gate(outcome="fail", reason="stopped by the spend cap before it finished")
    return Gate(outcome="pass" if outcome.passed else "fail",
                reason=outcome.pass_reason or ("passed" if outcome.passed else "failed"))


# --------------------------------------------------------------------------- comparing


def comparable(event: dict[str, Any]) -> dict[str, Any]:
    """An event as a replay must reproduce it (SPEC I77)."""
    dropped = NOT_REPRODUCIBLE.get(str(event.get("kind")), ())
    data = {k: v for k, v in (event.get("data") or {}).items() if k not in dropped}
    return {**{k: v for k, v in event.items() if k != "t"}, "data": data}


def _events(path: Path) -> list[dict[str, Any]]:
    """A trace's events as JSON. A damaged trace is named before anything runs, and so is
    the trace of a finished run that ends before its run_end (cut at a line boundary: it
    reads, but scoring it would score a run that never ended)."""
    parsed = read_trace(path)
    if path.is_dir() and (path / OUTCOME_FILE).is_file():
        from pytest_sabot.results.adjudicate import check_trace

        check_trace(path, parsed.start.cell_id)
    trace = path / "events.jsonl" if path.is_dir() else path
    return [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def _call_of(events: list[dict[str, Any]], upto: int, agent: str) -> int | None:
    """The index of ``agent``'s model call at or before position ``upto``."""
    for event in reversed(events[: upto + 1]):
        if event.get("kind") == "model_call" and event.get("component") == agent:
            index = (event.get("data") or {}).get("call_index")
            return int(index) if isinstance(index, int) else None
    return None


def first_trace_difference(
    recorded: list[dict[str, Any]], replayed: list[dict[str, Any]]
) -> Difference | None:
    """The first event of the replayed trace that is not the recorded one, or None."""
    for seq, (a, b) in enumerate(zip(recorded, replayed, strict=False)):
        ca, cb = comparable(a), comparable(b)
        if ca == cb:
            continue
        agent = str(a.get("component") or "")
        where = first_difference(ca, cb) or "the event"
        what = f"{a.get('kind')} event: {where}"
        if a.get("kind") != b.get("kind"):
            what = f"the recording has a {a.get('kind')} event here, the replay a {b.get('kind')}"
        return Difference(seq=seq, agent=agent, call=_call_of(recorded, seq, agent),
                          kind=str(a.get("kind")), what=what)
    if len(recorded) != len(replayed):
        longer, which = (recorded, "recording") if len(recorded) > len(replayed) else (
            replayed, "replay")
        seq = min(len(recorded), len(replayed))
        event = longer[seq]
        agent = str(event.get("component") or "")
        return Difference(
            seq=seq, agent=agent, call=_call_of(longer, seq, agent), kind=str(event.get("kind")),
            what=(f"the recording has {len(recorded)} events, the replay {len(replayed)}: the "
                  f"{which} goes on with a {event.get('kind')} event"),
        )
    return None


def _gateway_difference(error: str, recorded: list[dict[str, Any]]) -> Difference:
    """A call the recording could not answer: the gateway names the agent and call."""
    import re

    found = re.search(r"agent (?P<agent>\S+), call index (?P<call>\d+)", error)
    agent = found["agent"].rstrip(",:") if found else ""
    call = int(found["call"]) if found else None
    seq = None
    for event in recorded:
        data = event.get("data") or {}
        if (event.get("kind") == "model_call" and event.get("component") == agent
                and data.get("call_index") == call):
            seq = int(event["seq"])
            break
    return Difference(seq=seq, agent=agent, call=call, kind="model_call",
                      what=f"the recording could not answer the call: {error}")


def _verdict_difference(original: Any, replayed: Any) -> str | None:
    a = original.model_dump(mode="json")
    b = replayed.model_dump(mode="json")
    return first_difference(a, b)


# --------------------------------------------------------------------------- running


@contextmanager
def _workdir(out: Path | None) -> Iterator[Path]:
    if out is not None:
        if out.exists() and (not out.is_dir() or any(out.iterdir())):
            raise SabotDataError(out, "--out", "a new or empty directory for the replay's "
                                 "own record", "a directory that already holds files")
        out.mkdir(parents=True, exist_ok=True)
        yield out
        return
    tmp = Path(tempfile.mkdtemp(prefix="sabot-replay-"))
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # the replay's own scratch, never a record


def _score(std: Any, cell: Any, run_dir: Path, out_dir: Path) -> CellVerdict | BaselineVerdict:
    from pytest_sabot.results.adjudicate import (
        baseline_status,
        score_baseline_dir,
        score_fault_dir,
    )

    if cell.is_baseline:
        return score_baseline_dir(std, run_dir)
    return score_fault_dir(std, cell, run_dir, baseline_status(out_dir, std, cell))


def replay_cell(
    cell_dir: Path, *, root: Path | None = None, out: Path | None = None, timeout: float = 300.0,
    trust_local_agent: bool = False,
) -> ReplayReport:
    """Replay one recorded cell and compare (see the module's text). Raises
    SabotDataError on bad input, FileNotFoundError when the cell has no recording.

    The matrix is the one the cell's session ran (its manifest: the standard root, the
    adapters, a trusted agent's or an MCP client's row). A trusted agent's cell runs the
    agent again only with ``trust_local_agent``; an MCP client's cell is not run here (its
    client is the pipeline)."""
    from pytest_sabot.results.recorded import session_standard

    _cell, out_dir, _recording = _cell_paths(cell_dir)
    original = _read_outcome(Path(cell_dir))
    start = _events(Path(cell_dir))[0]["data"]
    with ExitStack() as stack:
        agent = _outside_pipeline(out_dir, original.session, cell_dir, timeout,
                                  trust_local_agent)
        if agent is not None:
            stack.callback(agent)
        std = stack.enter_context(session_standard(
            out_dir, int(start["wave"]), session=original.session or None, root=root,
            rules=str(start["rules"])))
        return _replay_in(std, cell_dir, out=out, timeout=timeout)


def _outside_pipeline(out_dir: Path, session: str, cell_dir: Path, timeout: float,
                      trusted: bool) -> Callable[[], None] | None:
    """Register the trusted agent a cell's session ran (its undo), refuse an MCP client's
    cell, or do nothing (None) for a session of the wave's own rows."""
    from pytest_sabot.results.recorded import session_manifests
    from pytest_sabot.trusted.sabot import MCP_NAME, NAME, forget, register

    own = next((m for m in session_manifests(out_dir)[0] if m.run_id == session), None)
    if own is None:
        return None
    if own.outside_row == MCP_NAME:
        raise SabotDataError(cell_dir, "cell_id", "a cell whose pipeline can run here: an "
                             "MCP client's cell is run again by serving it to its client "
                             "(sabot mcp CELL_ID)", own.outside_row)
    if own.agent is None:
        return None
    if not trusted:
        raise SabotDataError(cell_dir, "--trust-local-agent", "the trust flag: the cell's "
                             f"pipeline is the trusted agent {own.agent}, which a replay runs "
                             "again (importable from here, in a supervised child process)",
                             "not given")
    register(own.agent, timeout, row=own.outside_row or NAME)
    return forget


def _replay_in(std: Standard, cell_dir: Path, *, out: Path | None, timeout: float
               ) -> ReplayReport:
    """The replay of one cell of ``std`` (the session's matrix, loaded)."""
    from pytest_sabot.core.model_spec import parse_model
    from pytest_sabot.gateway import GatewaySettings, start_gateway
    from pytest_sabot.harness.run import RunSettings, run_cell
    from pytest_sabot.results.outcomes import funnel_word, outcome_of

    cell_id, out_dir, recording = _cell_paths(cell_dir)
    original = _read_outcome(Path(cell_dir))
    recorded = _events(Path(cell_dir))
    start = recorded[0]["data"]
    # A keyless cell records no exchanges: the embedded model answers again (it is a pure
    # function of the seed and the request), so the replay still calls no provider (I77).
    keyless = not recording.is_file() and (original.model or "").startswith("sim")
    if not recording.is_file() and not keyless:
        raise FileNotFoundError(
            f"{cell_dir}: no recorded exchanges to replay ({recording} does not exist): only "
            f"live runs record their exchanges; this cell ran under {original.model or '?'}"
        )
    calls = 0 if keyless else len(read_recording(out_dir / RECORDINGS_DIR, cell_id))
    answered_by = (
        f"the embedded model {original.model} (keyless runs record no exchanges; it answers "
        "the same requests the same way)"
        if keyless
        else str(recording)
    )
    cell = next((c for c in std.cells if c.id == cell_id), None)
    if cell is None:
        raise SabotDataError(cell_dir, "cell_id", f"a cell registered in wave {start['wave']} "
                             f"of {std.root}", cell_id)
    from pytest_sabot.core.frameworks import ADAPTERS, RECORDED_ORIGIN

    if ADAPTERS.entry(cell.framework).origin.startswith(RECORDED_ORIGIN):
        # Its records read without the adapter (I107); running it again needs the adapter.
        raise SabotDataError(cell_dir, "--sabot-adapter", "the adapter that runs the cell's "
                             f"pipeline (no adapter of {cell.framework!r} is installed here; "
                             "give --sabot-adapter module:factory)", "not given")
    notes: list[str] = []
    registration = std.registration_hash()
    if original.registration_hash and original.registration_hash != registration:
        notes.append(
            f"recorded under registration {original.registration_hash[:16]}, replayed from "
            f"{std.root} ({registration[:16]}): task material that changed since "
            "shows as a difference"
        )
    base_verdict = _score(std, cell, Path(cell_dir), out_dir)
    word = outcome_of(base_verdict)
    funnel = word.word if isinstance(base_verdict, BaselineVerdict) else (
        base_verdict.excluded.code if base_verdict.excluded else funnel_word(base_verdict))
    gate = gate_of(original)
    with _workdir(out) as work:
        gateway = start_gateway(GatewaySettings())
        try:
            settings = RunSettings(
                root=std.root, out_dir=work, gateway_url=gateway.url,
                model=parse_model(
                    str(original.model) if keyless else f"replay:{out_dir / RECORDINGS_DIR}"
                ),
                timeout_s=timeout,
                downgrade_model=original.downgrade_model, attempts=1,
                session=f"replay-of-{original.session or 'unknown'}",
                registration_hash=registration, rules=std.rules.version,
            )
            replayed_outcome = run_cell(cell, std.wave, settings)
        finally:
            gateway.close()
        run_dir = work / CELLS_DIR / cell_id
        soft = Path(cell_dir) / SOFT_FILE
        if soft.is_file():  # the judge is not asked again: its recorded verdict stands
            shutil.copyfile(soft, run_dir / SOFT_FILE)
        replayed = _events(run_dir)
        difference = first_trace_difference(recorded, replayed)
        if replayed_outcome.error is not None and original.error is None:
            if "replay: cell" in replayed_outcome.error:
                refused = _gateway_difference(replayed_outcome.error, recorded)
                # The refusal is named unless the trace already differs before it (a reply
                # that differs is carried into a later request the recording cannot answer).
                if (difference is None or difference.seq is None or refused.seq is None
                        or refused.seq <= difference.seq):
                    difference = refused
            elif difference is None:
                difference = Difference(seq=None, agent="", call=None, kind="run_end",
                                        what=f"the replay ended in a run error: "
                                        f"{replayed_outcome.error}")
        replayed_verdict = _score(std, cell, run_dir, out_dir)
        if difference is None:
            differs = _verdict_difference(base_verdict, replayed_verdict)
            if differs is not None:
                difference = Difference(seq=None, agent="", call=None, kind="verdict",
                                        what=f"the same trace scored differently at {differs}")
        reproduction: Reproduction = "verified" if difference is None else "diverged"
        code = replay_exit(reproduction)
        return ReplayReport(
            cell_id=cell_id, cell_dir=str(cell_dir), recording=answered_by,
            reproduction=reproduction, difference=difference,
            original_verdict=word.verdict, original_funnel=funnel,
            replayed_verdict=outcome_of(replayed_verdict).verdict, gate=gate, exit_code=code,
            events=len(recorded), replayed_events=len(replayed), calls=calls,
            replay_dir=str(work) if out is not None else None, notes=notes,
        )


def report_lines(r: ReplayReport) -> list[str]:
    lines = [
        (
            f"cell {r.cell_id}: replayed by {r.recording}; no provider was called"
            if r.recording.startswith("the embedded model")
            else f"cell {r.cell_id}: replayed from {r.recording} ({r.calls} recorded model "
            "calls; no model was called)"
        ),
        f"reproduction: {r.reproduction}",
    ]
    if r.difference is not None:
        d = r.difference
        where = [f"event {d.seq}" if d.seq is not None else "", f"agent {d.agent}" if d.agent
                 else "", f"call {d.call}" if d.call is not None else ""]
        lines.append(f"first difference ({', '.join(w for w in where if w) or d.kind}): {d.what}")
    else:
        lines.append(f"the replay reproduced all {r.events} events of the trace and its verdict")
    lines += [
        f"original verdict: {r.original_verdict} ({r.original_funnel})"
        + (f"; replayed: {r.replayed_verdict}" if r.replayed_verdict != r.original_verdict
           else ""),
        f"original gate: {r.gate.outcome} ({r.gate.reason})",
        *[f"note: {n}" for n in r.notes],
        r.compared,
    ]
    if r.replay_dir:
        lines.append(f"the replay's own record: {r.replay_dir}")
    lines.append(replay_exit_line(r.exit_code, r.gate.outcome))
    return lines


def lab_record(path: Path) -> Path | None:
    """The lab run record ``path`` names (a run.json, a run.prev-N.json, or a lab output
    directory holding run.json), or None when it is not a lab run's."""
    from pytest_sabot.lab.vocabulary import RUN_FILE

    path = Path(path)
    if path.is_dir():
        return path / RUN_FILE if (path / RUN_FILE).is_file() else None
    if path.is_file() and path.name.startswith("run") and path.suffix == ".json":
        return path
    return None


def replay_exit(reproduction: Reproduction) -> int:
    """The one replay rule (SPEC I143), for Sabot cells and lab runs alike: 0 verified, 1
    diverged (2 bad input and 3 nothing recorded to replay are said before a replay
    runs). The original gate is never the exit code: it is named in the report."""
    return EXIT_PASS if reproduction == "verified" else EXIT_GATE


def replay_exit_line(code: int, original_gate: str) -> str:
    """The report's last line: the exit code and what it says (and does not say)."""
    if code == EXIT_PASS:
        return (f"exit 0: verified (the original gate, {original_gate}, stands: a replay "
                "reproduces a run, it does not turn a failure into a pass)")
    return f"exit 1: diverged (the original gate was {original_gate})"


def replay_lab(run_file: Path) -> tuple[list[str], int, dict[str, Any]]:
    """``sabot replay`` of a lab run: the lab's own replay (every request and wait of the
    record re-executed against a fresh world, the recorded answers standing in for the
    agent), under the one replay rule (:func:`replay_exit`). Returns (lines, exit code, the
    --json report)."""
    from pytest_sabot.lab.record import read_run
    from pytest_sabot.lab.replay import replay_run

    record = read_run(run_file)
    report = replay_run(record)
    gate = record.gate
    code = replay_exit(report.reproduction)
    lines = [
        f"lab run {record.run_id}: replayed from {run_file} ({report.actions} requests and "
        "waits re-executed; the recorded answers stand in for the agent)",
        f"reproduction: {report.reproduction}",
    ]
    d = report.first_difference
    if d is not None:
        lines.append(f"first difference ({d.where}): {d.field or 'the whole value'}: recorded "
                     f"{d.recorded!r}, replayed {d.replayed!r}")
    lines.append(f"original gate: {gate.outcome} (exit {gate.exit_code})"
                 + (f"; replayed: {report.replayed_gate}"
                    if report.replayed_gate != gate.outcome else ""))
    lines += [f"  - {reason}" for reason in gate.reasons]
    lines.append(replay_exit_line(code, gate.outcome))
    data = {**report.model_dump(mode="json"), "exit_code": code,
            "original_reasons": list(gate.reasons)}
    return lines, code, data


def cmd_replay(args: argparse.Namespace) -> int:
    from pytest_sabot.report.terminal import console, print_lines

    lab = lab_record(args.cell_dir)
    if lab is not None:
        try:
            lines, code, data = replay_lab(lab)
        except SabotDataError as exc:
            return fail("sabot replay", exc)
        if args.json:
            print(json.dumps(data, indent=2))
        else:
            print_lines(console(), lines)
        return code
    from pytest_sabot.core.frameworks import register_targets

    problem = register_targets(getattr(args, "sabot_adapter", None))
    if problem is not None:
        return fail("sabot replay", problem)
    try:
        report = replay_cell(args.cell_dir, root=args.sabot_root, out=args.out,
                             timeout=args.timeout,
                             trust_local_agent=bool(getattr(args, "trust_local_agent", False)))
    except FileNotFoundError as exc:
        return fail("sabot replay", f"{exc} (inconclusive, exit 3)", EXIT_INCONCLUSIVE)
    except SabotDataError as exc:
        return fail("sabot replay", exc)
    if args.json:
        print(report.model_dump_json(indent=2))
    else:
        print_lines(console(), report_lines(report))
    return report.exit_code


__all__ = [
    "Difference",
    "Gate",
    "ReplayReport",
    "cmd_replay",
    "comparable",
    "first_trace_difference",
    "gate_of",
    "lab_record",
    "replay_cell",
    "replay_exit",
    "replay_exit_line",
    "replay_lab",
    "report_lines",
]
