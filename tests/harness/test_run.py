"""The run contract of ``pytest_sabot.harness.run.run_cell``, tested directly (issue 11):
what one cell's run leaves on disk, the one retry of a run error, a run the spend cap
stopped, an earlier record set aside (never deleted) and a crashed worker's attempt kept.

Cells run the real LangGraph pipeline against a real gateway on 127.0.0.1 whose ``sim``
scheme is served by the embedded model, behind a backend that fails the calls a test
names (a backend is the gateway's extension point; nothing of the harness is replaced).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_sabot.core.records import (
    CRASH_FILE,
    OUTCOME_FILE,
    SET_ASIDE_FILE,
    SUPERSEDED_DIR,
    RunOutcome,
    cell_dir,
)
from pytest_sabot.core.trace_io import PARTIAL_SUFFIX, TRACE_FILE, read_trace
from pytest_sabot.gateway import GatewaySettings, start_gateway
from pytest_sabot.gateway.backends import BackendError, BackendReply, CallContext
from pytest_sabot.gateway.backends.sim import SimBackend
from pytest_sabot.harness.run import RunSettings, note_crash, run_cell
from pytest_sabot.matrix.standard import Standard, load_standard

CELL = "langgraph-default-baseline-T1-s11"
Failing = Callable[[CallContext], BackendError | None]


class FailingWhere:
    """The embedded model, except for the calls ``fails`` answers with an error."""

    def __init__(self) -> None:
        self.sim = SimBackend()
        self.fails: Failing = lambda call: None

    def complete(self, request: dict[str, Any], call: CallContext) -> BackendReply:
        failure = self.fails(call)
        if failure is not None:
            raise failure
        return self.sim.complete(request, call)


@pytest.fixture(scope="module")
def std() -> Standard:
    return load_standard(1)


@pytest.fixture(scope="module")
def backend() -> FailingWhere:
    return FailingWhere()


@pytest.fixture(scope="module")
def gateway_url(backend: FailingWhere) -> Iterator[str]:
    with start_gateway(GatewaySettings(), backends={"sim": backend}) as gateway:
        yield str(gateway.url)


@pytest.fixture
def fails(backend: FailingWhere) -> Iterator[Callable[[Failing], None]]:
    def set_to(rule: Failing) -> None:
        backend.fails = rule

    yield set_to
    backend.fails = lambda call: None


def _settings(std: Standard, out: Path, url: str, **extra: Any) -> RunSettings:
    return RunSettings(root=std.root, out_dir=out, gateway_url=url, model="sim", **extra)


def _outcome(out: Path) -> RunOutcome:
    return RunOutcome.model_validate_json((cell_dir(out, CELL) / OUTCOME_FILE).read_text())


def test_S8_a_run_leaves_its_trace_its_workspace_and_its_outcome(
    std: Standard, gateway_url: str, tmp_path: Path
) -> None:
    settings = _settings(std, tmp_path, gateway_url, session="s-1", rules="v0.1.1",
                         registration_hash="h" * 64)
    outcome = run_cell(std.cell(CELL), std.wave, settings)
    run_dir = cell_dir(tmp_path, CELL)
    assert _outcome(tmp_path) == outcome
    assert (outcome.attempts, outcome.error, outcome.passed, outcome.stopped) == (1, None, True,
                                                                                None)
    # provenance: the model as given (parsed once, recorded as written)
    assert (outcome.model, outcome.session, outcome.rules) == ("sim", "s-1", "v0.1.1")
    assert outcome.registration_hash == "h" * 64 and outcome.downgrade_model is None
    trace = read_trace(run_dir)
    assert trace.start.cell_id == CELL and trace.start.model == "sim" and trace.start.attempt == 1
    assert trace.events[-1].kind == "run_end" and trace.events[-1].data.status == "completed"
    assert trace.of_kind("artifact") and trace.of_kind("model_call")
    assert (run_dir / "workspace").is_dir()
    assert not (run_dir / (TRACE_FILE + PARTIAL_SUFFIX)).exists()


def test_S3_2_a_run_error_is_retried_once_and_the_first_attempt_is_kept(
    std: Standard, gateway_url: str, tmp_path: Path, fails: Callable[[Failing], None]
) -> None:
    fails(lambda call: BackendError(503, "the model is down", "down")
          if call.run_key.endswith("~a1") else None)
    outcome = run_cell(std.cell(CELL), std.wave, _settings(std, tmp_path, gateway_url))
    assert (outcome.attempts, outcome.error, outcome.passed) == (2, None, True)
    run_dir = cell_dir(tmp_path, CELL)
    first = read_trace(run_dir / "attempt-1")
    assert "the model is down" in first.of_kind("run_error")[0].data.message
    assert first.events[-1].data.status == "error"
    assert read_trace(run_dir).start.attempt == 2 and not read_trace(run_dir).of_kind("run_error")


def test_S3_2_a_second_run_error_is_recorded_with_its_text_never_dropped(
    std: Standard, gateway_url: str, tmp_path: Path, fails: Callable[[Failing], None]
) -> None:
    fails(lambda call: BackendError(503, "the model is down", "down"))
    outcome = run_cell(std.cell(CELL), std.wave, _settings(std, tmp_path, gateway_url))
    assert outcome.attempts == 2 and outcome.error and "the model is down" in outcome.error
    assert (outcome.passed, outcome.pass_reason) == (False, "no artifact was emitted")
    assert _outcome(tmp_path) == outcome
    for where in ("attempt-1", ""):
        trace = read_trace(cell_dir(tmp_path, CELL) / where)
        assert len(trace.of_kind("run_error")) == 1


def test_S8_a_run_the_spend_cap_stopped_is_not_a_run_error_and_is_not_retried(
    std: Standard, gateway_url: str, tmp_path: Path, fails: Callable[[Failing], None]
) -> None:
    fails(lambda call: BackendError(429, "budget exhausted: the cap is reached",
                                    "sabot_budget_exhausted"))
    outcome = run_cell(std.cell(CELL), std.wave, _settings(std, tmp_path, gateway_url))
    assert (outcome.stopped, outcome.attempts) == ("budget", 1)
    assert not (cell_dir(tmp_path, CELL) / "attempt-1").exists()


def test_I42_an_earlier_record_is_set_aside_never_deleted(
    std: Standard, gateway_url: str, tmp_path: Path
) -> None:
    first = run_cell(std.cell(CELL), std.wave, _settings(std, tmp_path, gateway_url,
                                                          session="s-1"))
    before = (cell_dir(tmp_path, CELL) / TRACE_FILE).read_bytes()
    second = run_cell(std.cell(CELL), std.wave, _settings(std, tmp_path, gateway_url,
                                                           session="s-2"))
    aside = tmp_path / SUPERSEDED_DIR / f"{CELL}~1"
    assert (aside / TRACE_FILE).read_bytes() == before
    assert RunOutcome.model_validate_json((aside / OUTCOME_FILE).read_text()) == first
    note = json.loads((aside / SET_ASIDE_FILE).read_text())
    assert note["session"] == "s-2" and "runs again" in note["reason"]
    assert _outcome(tmp_path) == second and second.session == "s-2"


def test_I44_a_crashed_workers_files_are_the_first_attempt_and_only_the_retry_runs(
    std: Standard, gateway_url: str, tmp_path: Path
) -> None:
    run_dir = cell_dir(tmp_path, CELL)
    run_dir.mkdir(parents=True)
    (run_dir / (TRACE_FILE + PARTIAL_SUFFIX)).write_text('{"seq": 0, "kind": "run_sta')
    note_crash(run_dir, "s-1", "gw0", "worker 'gw0' crashed")
    outcome = run_cell(std.cell(CELL), std.wave, _settings(std, tmp_path, gateway_url,
                                                           session="s-1"))
    assert (outcome.attempts, outcome.error) == (2, None)
    kept = run_dir / "attempt-1"
    crashed = read_trace(kept)
    assert crashed.of_kind("run_error")[0].data.error_type == "WorkerCrash"
    assert (kept / CRASH_FILE).is_file() and (kept / (TRACE_FILE + ".crashed")).is_file()
    assert not (tmp_path / SUPERSEDED_DIR).exists()


def test_S4_an_adapters_run_end_with_a_bad_payload_fails_where_it_is_given(
    tmp_path: Path,
) -> None:
    """The adapter's run_end is held back to close the trace after the landing probe; a
    payload that is no run_end fails in the pipeline's own call, as any bad event does (a
    run error of the cell), never later in the harness."""
    from pydantic import ValidationError

    from pytest_sabot.harness.run import RunTrace

    trace = RunTrace(tmp_path / "run")
    with pytest.raises(ValidationError, match="status"):
        trace.emit("run_end", "worker", "x", status="failed", detail="gave up")
    assert trace.held_end is None and trace.events() == []
    trace.emit("run_end", "worker", "escalated", status="task_failed", detail="gave up")
    assert trace.held_end == ("worker", "escalated", {"status": "task_failed",
                                                      "detail": "gave up"})
    assert trace.events() == []  # held, not written
    trace.end(None)
    assert [e.kind for e in trace.events()] == ["run_end"]
    trace.finish()
