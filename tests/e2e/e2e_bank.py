"""Real cells for the acceptance tests, each run once per test session.

Every cell runs through ``run_cell`` against one loopback gateway whose embedded model is
wrapped so that every request body it answered is kept. A run is stored on disk under a
directory shared by all xdist workers of the session and guarded by a file lock, so a cell
that several tests read (a baseline, a landing cell, a prompt-hygiene cell) is paid for
once. The embedded model is deterministic, so which worker ran a cell does not matter.
"""

from __future__ import annotations

import copy
import importlib
import json
import socket
import threading
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock

from pytest_sabot.core.frameworks import adapter
from pytest_sabot.core.models.cells import CONFIGS, FRAMEWORKS, Cell
from pytest_sabot.core.models.trace import ProbeData, Trace
from pytest_sabot.core.models.verdict import BaselineVerdict, CellVerdict
from pytest_sabot.core.records import OUTCOME_FILE, RunOutcome, cell_dir
from pytest_sabot.core.trace_io import read_trace, write_json_atomic
from pytest_sabot.gateway.backends.base import BackendReply, CallContext
from pytest_sabot.gateway.backends.sim import SimBackend
from pytest_sabot.harness.run import RunSettings, run_cell
from pytest_sabot.matrix.standard import Standard
from pytest_sabot.results.adjudicate import score_baseline_dir, score_fault_dir

SEED = 11
VIGILANT = "sim:vigilant"
CREDULOUS = "sim:credulous"
ROWS: list[tuple[str, str]] = [(fw, cfg) for fw in FRAMEWORKS for cfg in CONFIGS]
EXCHANGES_DIR = "exchanges"


def framework_missing(framework: str) -> str | None:
    """Why a framework's pipeline cannot run here: its third-party packages are not
    installed (checked without importing them), or None. Only that is a reason to skip:
    the adapter's own modules are part of this package, so an import of them that breaks
    fails the test that needs it."""
    return adapter(framework).missing()


def require_adapter(framework: str) -> None:
    """Skip (naming what to install) when a framework's packages are absent; otherwise
    import the adapter's pipeline, so a broken import in the package fails, never skips."""
    reason = framework_missing(framework)
    if reason is not None:
        pytest.skip(reason)
    importlib.import_module(adapter(framework).run.partition(":")[0])


def refused_url() -> str:
    """A gateway URL (with a secret segment) nobody listens on (a port just released by
    the kernel)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/no-gateway-here"


class RequestLog:
    """The embedded model, answering exactly as it does in a wave, with every exchange it
    served (``{"request": body, "response": completion}``) kept per run key in the order
    the requests arrived."""

    def __init__(self) -> None:
        self._sim = SimBackend()
        self._lock = threading.Lock()
        self._bodies: dict[str, list[dict[str, Any]]] = defaultdict(list)

    def check(self, name: str) -> None:
        self._sim.check(name)

    def complete(self, request: dict[str, Any], call: CallContext) -> BackendReply:
        exchange: dict[str, Any] = {"request": copy.deepcopy(request), "response": None}
        with self._lock:
            self._bodies[call.run_key].append(exchange)
        reply = self._sim.complete(request, call)
        exchange["response"] = copy.deepcopy(reply.response)
        return reply

    def take(self, cell_id: str) -> list[dict[str, Any]]:
        """Remove and return the exchanges of every attempt of one cell, in order."""
        prefix = f"{cell_id}~"
        with self._lock:
            keys = sorted(k for k in self._bodies if k.startswith(prefix))
            return [body for key in keys for body in self._bodies.pop(key)]


@dataclass(frozen=True)
class Recorded:
    """One finished cell: its directory, outcome, trace and the exchanges its agents had
    with the model."""

    cell: Cell
    model: str
    run_dir: Path
    outcome: RunOutcome
    exchanges: list[dict[str, Any]]

    @property
    def requests(self) -> list[dict[str, Any]]:
        return [x["request"] for x in self.exchanges]

    @cached_property
    def trace(self) -> Trace:
        return read_trace(self.run_dir)

    @property
    def probe(self) -> ProbeData:
        probes = self.trace.of_kind("probe")
        assert len(probes) == 1, f"{self.cell.id}: expected one probe event, got {len(probes)}"
        data: ProbeData = probes[0].data
        return data


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(path):
        yield


def _slug(model: str) -> str:
    return model.replace(":", "-")


@dataclass
class CellBank:
    std: Standard
    root: Path  # shared by every xdist worker of the session
    gateway_url: str
    log: RequestLog
    timeout_s: float = 120.0

    def settings(self, model: str, out_dir: Path) -> RunSettings:
        return RunSettings(
            root=self.std.root,
            out_dir=out_dir,
            gateway_url=self.gateway_url,
            model=model,
            timeout_s=self.timeout_s,
        )

    def run(self, cell_id: str, model: str = VIGILANT) -> Recorded:
        """The cell's run under ``model``, made now unless this session already has it."""
        cell = self.std.cell(cell_id)
        out = self.root / _slug(model)
        saved = out / EXCHANGES_DIR / f"{cell.id}.json"
        with _locked(out / "locks" / f"{cell.id}.lock"):
            if not saved.is_file():
                outcome = run_cell(cell, self.std.wave, self.settings(model, out))
                write_json_atomic(saved, self.log.take(cell.id))
            else:
                outcome = RunOutcome.model_validate_json(
                    (cell_dir(out, cell.id) / OUTCOME_FILE).read_text(encoding="utf-8")
                )
        exchanges = json.loads(saved.read_text(encoding="utf-8"))
        return Recorded(cell, model, cell_dir(out, cell.id), outcome, exchanges)

    def fresh(self, cell_id: str, model: str, out_dir: Path) -> Recorded:
        """Run the cell again into ``out_dir``, never reusing a stored run."""
        cell = self.std.cell(cell_id)
        with _locked(self.root / _slug(model) / "locks" / f"{cell.id}.lock"):
            outcome = run_cell(cell, self.std.wave, self.settings(model, out_dir))
            exchanges = self.log.take(cell.id)
        return Recorded(cell, model, cell_dir(out_dir, cell.id), outcome, exchanges)

    def baseline_verdict(self, rec: Recorded) -> BaselineVerdict:
        return score_baseline_dir(self.std, rec.run_dir)

    def verdict(self, rec: Recorded) -> CellVerdict:
        """The scored verdict of a fault run, its baseline (same model) run as well."""
        base = self.baseline_verdict(self.run(rec.cell.baseline_id, rec.model))
        return score_fault_dir(self.std, rec.cell, rec.run_dir, base.status)
