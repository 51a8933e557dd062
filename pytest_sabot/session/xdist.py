"""Hooks that exist only with pytest-xdist (registered only when it is loaded), and what
a worker is handed: the session's paths as the controller resolved them."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_sabot.session.core import SabotSession
    from pytest_sabot.session.settings import Settings


def worker_settings(settings: Settings, workerinput: dict[str, Any]) -> Settings:
    """A worker's settings: the paths of the session as the controller resolved them, so
    a worker started in another directory (``--tx`` with ``chdir``, a socket gateway)
    writes to and reads from the same places."""
    paths = workerinput.get("sabot_paths")
    if not isinstance(paths, dict):
        return settings
    return dataclasses.replace(settings, **{k: v for k, v in paths.items() if v is not None})


def controller_paths(settings: Settings, out_dir: Path) -> dict[str, str | None]:
    """The session's paths, absolute, for its workers (see ``worker_settings``)."""

    from pytest_sabot.session.gateway import ledger_dir

    def absolute(value: str | None) -> str | None:
        return None if value is None else str(Path(value).resolve())

    return {
        "out": str(out_dir.resolve()),
        "root": absolute(settings.root),
        "prices": absolute(settings.prices),
        "spend_ledger": str(ledger_dir(settings, out_dir)),
    }


class XdistHooks:
    def __init__(self, session: SabotSession) -> None:
        self.session = session

    @pytest.hookimpl
    def pytest_configure_node(self, node: Any) -> None:
        """Hand every worker the session's run id, its paths, resolved here (a worker may
        start in another directory), the connection budget their gateways share and how
        long each cell ran in earlier sessions, so that every worker collects the cells in
        one order. Nothing else: each worker starts its own gateway (a gateway given by
        --sabot-gateway-url travels with the options)."""
        from pytest_sabot.session.gateway import invocation_dir

        session = self.session
        node.workerinput["sabot_run_id"] = session.run_id
        if session.wave_given:
            node.workerinput["sabot_start_seconds"] = session.start_seconds()
            node.workerinput["sabot_paths"] = controller_paths(session.settings, session.out_dir)
            node.workerinput["sabot_invocation_dir"] = invocation_dir()
            if session.slots_dir is not None:
                node.workerinput["sabot_slots"] = str(session.slots_dir)

    @pytest.hookimpl
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """A worker is done: keep what its gateway spent (a crashed one sends nothing; its
        spend is in the project's ledger all the same)."""
        workeroutput = getattr(node, "workeroutput", None)
        if isinstance(workeroutput, dict):
            self.session.worker_down(str(node.gateway.id), workeroutput)

    @pytest.hookimpl
    def pytest_xdist_node_collection_finished(self, node: Any, ids: Sequence[str]) -> None:
        """The workers' collection is final (after -k, -m, --lf): fix the selection, before
        any cell is scheduled."""
        self.session.fix_selection_from_nodeids(ids)

    @pytest.hookimpl(tryfirst=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        """With several cells in flight per worker (--sabot-concurrency N), xdist's load
        scheduling keeps 3N+1 tests queued on every worker while any are pending, so a
        worker can start the cells after the one it runs even when that one is slow
        (session/inflight.py).
        Other distribution modes are xdist's own."""
        if config.getvalue("dist") != "load" or not self.session.wave_given:
            return None
        from pytest_sabot.session.inflight import queue_depth

        processes = len(config.getoption("tx", None) or []) or 1
        width = self.session.concurrency(processes)
        if width <= 1:
            return None
        return fed_scheduling(config, log, queue_depth(width))

    @pytest.hookimpl
    def pytest_handlecrashitem(self, crashitem: str, report: Any, sched: Any) -> None:
        """A worker died while running a cell: retry it once, then record RUN_ERROR."""
        self.session.worker_crashed(crashitem, report, sched)


def fed_scheduling(config: pytest.Config, log: Any, depth: int) -> Any:
    """xdist's LoadScheduling, keeping at least ``depth`` tests queued on every worker
    while any test is pending (xdist's own heuristic lets a worker's queue fall to two)."""
    from xdist.scheduler import LoadScheduling  # type: ignore[import-untyped]

    class FedScheduling(LoadScheduling):  # type: ignore[misc]
        def schedule(self) -> None:
            super().schedule()
            for node in self.nodes:
                self._feed(node)

        def check_schedule(self, node: Any, duration: float = 0) -> None:
            super().check_schedule(node, duration)
            self._feed(node)

        def _feed(self, node: Any) -> None:
            if self.pending and not node.shutting_down:
                short = depth - len(self.node2pending[node])
                if short > 0:
                    self._send_tests(node, short)

    return FedScheduling(config, log)
