"""How a session ends: the results written when it starts (nothing counted yet) and when
it ends, the session's manifest, its status, the workers stopped on an interrupt, and the
exit status the gates decide."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

from pytest_sabot import __version__
from pytest_sabot.core import manifest as manifest_mod
from pytest_sabot.core.models.states import NotRunReason, SessionStatus
from pytest_sabot.core.records import now_iso
from pytest_sabot.core.trace_io import OutputUnwritable
from pytest_sabot.harness.run import wait_for_abandoned
from pytest_sabot.results import RESULTS_FILE, ResultsFile, SessionGate, SessionInfo
from pytest_sabot.session import junit, start_order
from pytest_sabot.session.gates import evaluate, failures

if TYPE_CHECKING:
    from pytest_sabot.session.core import SabotSession

ABANDONED_WAIT_S = 10.0

STATUS_REASON: dict[SessionStatus, NotRunReason] = {
    "output-unwritable": "output unwritable",
    "budget-stopped": "budget",
    "interrupted": "interrupted",
    "crashed-workers": "crashed worker",
    "stopped": "stopped",
    "complete": "not reached",
    "running": "not reached",
}


def write_pending(state: SabotSession) -> None:
    """results.json as the session starts: its selection, nothing counted yet. Should
    the session be killed outright, this is what the directory says (incomplete), and
    sabot rescore still reproduces it."""
    from pytest_sabot.core.trace_io import write_text_atomic
    from pytest_sabot.report.render import markdown
    from pytest_sabot.results import build_results, write_results

    assert state.selection is not None
    pending: dict[str, tuple[NotRunReason, str]] = {
        c.id: ("pending", f"session {state.run_id} had not recorded it yet")
        for c in state.selection.to_record
    }
    results = build_results(
        state.standard,
        state.out_dir,
        session=info(state, "running", ""),
        not_run=pending,
        counted={},
        **common(state, judge=None),
    )
    assert state.boards is not None
    target = state.boards.session_dir
    target.mkdir(parents=True, exist_ok=True)
    write_results(results, target)
    write_text_atomic(target / "RESULTS.md", markdown(results))


def info(state: SabotSession, status: SessionStatus, detail: str) -> SessionInfo:
    return SessionInfo(
        run_id=state.run_id,
        mode="resume" if state.settings.resume else "fresh",
        rerun_errors=state.settings.rerun_errors,
        rerun_error_cells=sorted(
            {e["cell_id"] for e in state.events if e["kind"] == "rerun_error"}
        ),
        status=status,
        detail=detail,
        started=state.started,
        ended=None if status == "running" else now_iso(),
    )


def with_session(first: ResultsFile, session: SessionInfo) -> ResultsFile:
    """``first`` with how the session ended. A build reads the session only to choose the
    records it counts (its run id and mode, never its status) and to copy it; the reasons
    it is given apply only to cells without a record. So when ``first`` has none, building
    again with the final session and reasons gives ``first`` with that session: the records
    are not read and scored a second time."""
    assert not first.selection.not_run, "cells without a record need their reasons"
    assert first.session is not None and first.session.run_id == session.run_id
    assert first.session.mode == session.mode
    return first.model_copy(update={"session": session})


def common(state: SabotSession, judge: dict[str, Any] | None) -> dict[str, Any]:
    """The inputs of build_results every results.json of this session shares."""
    from pytest_sabot.results.adjudicate import Provenance

    assert state.selection is not None
    std = state.standard
    return dict(
        selected_ids=state.selection.ids,
        pulled_in=[c.id for c in state.selection.pulled_in],
        model=state.settings.model,
        upstream=upstream_of(state),
        downgrade_model=state.settings.downgrade_in_use,
        judge_spec=state.settings.judge,
        judge=judge,
        spend=state.spend(),
        provenance=Provenance(
            state.settings.model.given, std.registration_hash(), std.rules.version
        ),
        keyword=state.selection.keyword,
        markexpr=state.selection.markexpr,
        filters=state.selection.filters,
    )


def upstream_of(state: SabotSession) -> str | None:
    """What results.json names as the upstream: the --sabot-base-url given, or, for a
    session run through a standalone gateway, that gateway's origin (its upstream, spend
    and recordings are the gateway's own)."""
    url = state.settings.gateway_url
    if not url:  # only a live model has an upstream; the keyless one calls none
        return state.settings.base_url if state.settings.model.is_live else None
    from pytest_sabot.gateway.client import split_gateway_url
    from pytest_sabot.results.build import GATEWAY_UPSTREAM

    origin, _secret = split_gateway_url(url)
    return f"{GATEWAY_UPSTREAM}{origin}"


def finish(state: SabotSession, session: pytest.Session) -> None:
    """Controller: score the selection from disk, write results, decide the exit."""
    wait_for_abandoned(ABANDONED_WAIT_S)
    if state.runner is not None:  # every process, before the controller reads the records
        state.runner.scrub_again()
    if state.is_worker or not state.output_started or state.selection is None:
        return
    try:
        _finish(state, session)
    except KeyboardInterrupt:
        _kill_workers(state)
        state.messages.append(
            ("pytest-sabot: interrupted again while writing results; the records on disk "
             "are intact, results.json may be the previous one (rebuild it with "
             "--sabot-resume or sabot rescore)", True)
        )
        raise pytest.exit(
            "pytest-sabot: interrupted twice", returncode=pytest.ExitCode.INTERRUPTED
        ) from None


def remember_seconds(state: SabotSession) -> None:
    """Leave how long every cell this session counted ran in pytest's cache, for the order
    the next session of the wave and model starts its cells in (SPEC I163). A cache that
    cannot be written (a read-only checkout) is pytest's warning, nothing more."""
    measured = {
        cid: float(result["seconds"]) for cid, result in state.reports.items()
        if isinstance(result.get("seconds"), int | float) and result["seconds"] > 0
    }
    start_order.remember_seconds(
        getattr(state.config, "cache", None), state.start_table(), measured
    )


def _stop_workers(state: SabotSession, session: pytest.Session) -> None:
    """An interrupted xdist session: stop the workers before reading the disk, so no
    record is added after the results were computed."""
    dsession = state.config.pluginmanager.getplugin("dsession")
    nodemanager = getattr(dsession, "nodemanager", None)
    if nodemanager is not None:
        nodemanager.teardown_nodes()


def _status(
    state: SabotSession, session: pytest.Session, complete: bool
) -> tuple[SessionStatus, str]:
    if state.stop_reason == "output unwritable":
        return "output-unwritable", state.stop_detail
    if state.stop_reason == "budget":
        return "budget-stopped", state.stop_detail
    if complete:
        return "complete", ""
    stopped_by = session.shouldfail or session.shouldstop
    if stopped_by:  # -x, --maxfail, --sw: pytest stopped on purpose
        return "stopped", str(stopped_by)
    if session.exitstatus == pytest.ExitCode.INTERRUPTED:
        return "interrupted", "interrupted (Ctrl-C or SIGTERM)"
    dsession = state.config.pluginmanager.getplugin("dsession")
    gave_up = getattr(dsession, "_summary_report", None)  # xdist: too many crashes
    if gave_up:
        return "crashed-workers", str(gave_up)
    if state.crashed_cells:
        return "crashed-workers", "worker processes crashed"
    return "stopped", "the session ended before its selection was recorded"


def _finish(state: SabotSession, session: pytest.Session) -> None:
    from pytest_sabot.core.trace_io import write_text_atomic
    from pytest_sabot.report.render import markdown
    from pytest_sabot.results import build_results, write_results

    assert state.selection is not None
    if session.exitstatus == pytest.ExitCode.INTERRUPTED:
        try:
            _stop_workers(state, session)
        except KeyboardInterrupt:  # a second interrupt: stop them without waiting
            _kill_workers(state)
            state.messages.append(
                ("pytest-sabot: interrupted again: the workers were stopped without "
                 "waiting; their unfinished cells have no record", True)
            )
    if state.reserve is not None:
        manifest_mod.release(state.reserve)
    std = state.standard
    judge = None
    if state.settings.judge != "none":
        from pytest_sabot.judge.run import collect_summary

        judge = collect_summary(
            state.out_dir,
            [c.id for c in state.selection.runnable],
            state.settings.judge,
            state.judge_note,
        )
    reasons: dict[str, tuple[NotRunReason, str]] = {
        cid: ("crashed worker", text) for cid, text in state.crashed_cells.items()
    }
    shared = common(state, judge)
    first = build_results(
        std, state.out_dir, session=info(state, "running", ""), not_run=reasons, **shared
    )
    status, detail = _status(state, session, first.selection.complete)
    reason = STATUS_REASON[status]
    damaged = {n.cell_id: n.detail for n in first.selection.not_run
               if n.reason == "damaged record"}
    # A cell whose folder holds an unfinished run says so when the session has nothing
    # more to say of it (it ended complete, so the cell was not stopped by its end).
    unfinished = {n.cell_id: n.detail for n in first.selection.not_run
                  if n.reason == "not reached" and n.detail}
    for cid in first.selection.missing + [
        c for c in first.selection.pulled_in if c not in reasons
    ]:
        if cid in damaged:  # its own reason says more than how the session ended
            reasons.setdefault(cid, ("damaged record", damaged[cid]))
        if reason == "not reached" and not detail and cid in unfinished:
            reasons.setdefault(cid, (reason, unfinished[cid]))
        reasons.setdefault(cid, (reason, detail))
    if first.selection.not_run:  # reasons to give: build again with them
        results = build_results(
            std, state.out_dir, session=info(state, status, detail), not_run=reasons, **shared
        )
    else:  # every cell was recorded: the same scoring, only how the session ended is new
        results = with_session(first, info(state, status, detail))
    results = extended(state, results)
    state.results = results
    state.gates = evaluate(results, state.settings.fail_under, state.settings.max_run_errors)
    reported = [SessionGate(name=g.name, passed=g.passed, message=g.message)
                for g in state.gates if g.shown]
    if reported:  # what the exit status read, kept with the results it read it from
        results = state.results = results.model_copy(update={"gates": reported})
    try:
        boards = state.boards
        assert boards is not None
        boards.session_dir.mkdir(parents=True, exist_ok=True)
        write_results(results, boards.session_dir)
        write_text_atomic(boards.session_dir / "RESULTS.md", markdown(results))
        if boards.apart:  # the directory keeps a board of its own (session/boards.py)
            from pytest_sabot.session.boards import directory_board, registered_reading

            kept = directory_board(boards, std, state.settings.root, results, now_iso())
            state.directory_results = kept
            if boards.registered_rules is not None:  # the two readings of the same cells
                state.registered_reading = (
                    kept if boards.wave is None
                    else registered_reading(boards, std, state.settings.root, results))
            write_results(kept, state.out_dir)
            write_text_atomic(state.out_dir / "RESULTS.md", markdown(kept))
        state.results_written = True
        _write_html(state)
    except OutputUnwritable as exc:
        state.messages.append(
            (f"pytest-sabot: results.json could not be written ({exc}); the one on disk "
             "is the one the session started with (incomplete)", True)
        )
        if status == "complete":
            status, detail = "output-unwritable", str(exc)
            state.stop_detail = state.stop_detail or str(exc)
    record = manifest(state, status, detail, results)
    try:
        manifest_mod.write_manifest(state.out_dir, record)
    except OutputUnwritable as exc:
        record = None
        state.messages.append((f"pytest-sabot: the session record could not be "
                              f"written ({exc})", True))
    remember_seconds(state)
    if state.results_written:  # the run history (docs/HISTORY.md): one line, never a failure
        from pytest_sabot.history.record import record_session_end

        own = state.boards.session_dir / RESULTS_FILE if state.boards is not None else None
        said = record_session_end(state.settings.history, state.out_dir, results, record,
                                  results_path=own)
        if said is not None:
            state.messages.append(said)
    for event in state.events:
        if event["kind"] == "damaged":
            state.messages.append(
                (f"pytest-sabot: damaged record of {event['cell_id']} set aside and its cell "
                 f"run again: {event['detail']}", True)
            )
    for n in results.selection.not_run:
        if n.reason == "damaged record":
            state.messages.append(
                (f"pytest-sabot: {n.cell_id} left out: its record is damaged ({n.detail}); "
                 "--sabot-resume sets it aside and runs the cell again", True)
            )
    if status == "output-unwritable":
        state.messages.append((_unwritable_message(state, results), True))
    from pytest_sabot.session.final import final_fields, report_unreported, settle

    fields = final_fields(state.standard, results)
    settle(state.config, state.cell_reports, fields)
    pulled = set(results.selection.pulled_in)  # no test of the session's (SPEC I41)
    report_unreported(
        state.config, results.wave, state.reported_cells,
        {c: n for c, n in state.cell_nodeids.items() if c not in pulled}, fields,
        {n.cell_id: n.reason for n in results.selection.not_run})
    junit.suite_properties(state.config, results, state.run_id)
    junit.report_gates(state.config, state.gates)
    _exit_status(state, session, results, status)


def extended(state: SabotSession, results: ResultsFile) -> ResultsFile:
    """results.json as other plugins extend it (the pytest_sabot_results_json hook). Only
    what they put under ``extensions`` is kept; a plugin that fails, or adds something
    that is not JSON, is said and costs the session nothing."""
    document = results.model_dump(mode="json")
    document["extensions"] = {}
    try:
        state.config.hook.pytest_sabot_results_json(config=state.config, results=document)
        extensions = document.get("extensions")
        if not isinstance(extensions, dict):
            raise TypeError(f"results['extensions'] became a {type(extensions).__name__}")
        json.dumps(extensions, allow_nan=False)
    except Exception as exc:  # another plugin's failure must not hide the results
        state.messages.append(
            (f"pytest-sabot: a pytest_sabot_results_json hook failed ({type(exc).__name__}: "
             f"{exc}); results.json is written without extensions", True)
        )
        return results
    return results.model_copy(update={"extensions": extensions}) if extensions else results


def _kill_workers(state: SabotSession) -> None:
    """Stop the xdist workers at once (their processes, which this session started)."""
    dsession = state.config.pluginmanager.getplugin("dsession")
    group = getattr(getattr(dsession, "nodemanager", None), "group", None)
    for gateway in list(group or []):
        io = getattr(gateway, "_io", None)
        kill = getattr(io, "kill", None)
        if callable(kill):
            kill()


def _unwritable_message(state: SabotSession, results: ResultsFile) -> str:
    sel = results.selection
    return (
        f"pytest-sabot: the session stopped because the output could not be written: "
        f"{state.stop_detail}. {sel.recorded} of {sel.selected} selected cells are safely "
        f"recorded in {state.out_dir}. Free some space (or fix the directory) and run the "
        "same command with --sabot-resume to record the rest."
    )


def _exit_status(
    state: SabotSession, session: pytest.Session, results: ResultsFile, status: str
) -> None:
    failed = failures(state.gates)
    if session.exitstatus == pytest.ExitCode.OK:
        if status != "complete":
            session.exitstatus = pytest.ExitCode.INTERRUPTED
        elif failed:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def manifest(
    state: SabotSession,
    status: SessionStatus,
    detail: str,
    results: ResultsFile | None = None,
) -> Any:
    from pytest_sabot.core.frameworks import installed_versions

    assert state.selection is not None
    std = state.standard
    set_aside = {e["cell_id"]: e["detail"] for e in state.events if e["kind"] == "set_aside"}
    pulled = [e for e in state.events if e["kind"] == "pulled_in"]
    not_run: dict[str, str] = {}
    recorded = 0
    if results is not None:
        not_run = {n.cell_id: n.reason for n in results.selection.not_run}
        recorded = results.selection.recorded
    return manifest_mod.SessionRecord(
        run_id=state.run_id,
        tool=f"pytest-sabot {__version__}",
        wave=std.wave.wave,
        rules=std.rules.version,
        wave_rules=std.wave.rules,
        model=state.settings.model.given,
        downgrade_model=state.settings.downgrade_in_use,
        judge=state.settings.judge,
        upstream=state.settings.base_url if state.settings.model.is_live else None,
        registration_hash=std.registration_hash(),
        versions=installed_versions(),
        mode=state.settings.mode,
        rerun_errors=state.settings.rerun_errors,
        started=state.started,
        ended=None if status == "running" else now_iso(),
        status=status,
        detail=detail,
        selection=manifest_mod.SessionSelection(
            cell_ids=state.selection.ids,
            pulled_in=[c.id for c in state.selection.pulled_in],
            keyword=state.selection.keyword,
            markexpr=state.selection.markexpr,
            filters=state.selection.filters,
            args=state.selection.args,
        ),
        recorded=recorded,
        not_run=not_run,
        set_aside=set_aside,
        rerun_error_cells=sorted({e["cell_id"] for e in state.events
                                  if e["kind"] == "rerun_error"}),
        pulled_in_reused=sorted({e["cell_id"] for e in pulled if e["detail"] == "reused"}),
        pulled_in_run=sorted({e["cell_id"] for e in pulled if e["detail"] == "run"}),
        matrix=std.wave.name or f"wave{std.wave.wave}",
        root=manifest_mod.recorded_root(std.root),
        agent=state.settings.agent,
        outside_row=std.outside.row if state.settings.agent and std.outside else None,
        adapters=manifest_mod.keep_adapters(
            state.out_dir, state.run_id, std.root, std.wave.frameworks
        ),
    )


def _write_html(state: SabotSession) -> None:
    """report.html beside results.json. It is a rendering of the records, so a failure to
    render is said, never allowed to cost the session its results."""
    from pytest_sabot.report.html import write_results_html

    try:
        state.report_html = write_results_html(state.out_dir)
    except OutputUnwritable as exc:
        state.messages.append((f"pytest-sabot: report.html could not be written ({exc})", True))
    except Exception as exc:  # a rendering bug must not hide the results
        state.messages.append(
            (f"pytest-sabot: report.html could not be rendered ({type(exc).__name__}: {exc})",
             True)
        )
