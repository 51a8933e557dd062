"""Hooks that exist only with pytest-xdist, registered only when it is loaded."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_sabot.session.core import SabotSession


class XdistHooks:
    def __init__(self, session: SabotSession) -> None:
        self.session = session

    @pytest.hookimpl
    def pytest_configure_node(self, node: Any) -> None:
        """Hand every worker the controller's gateway address and run id."""
        node.workerinput["sabot_gateway_url"] = self.session.gateway_url
        node.workerinput["sabot_run_id"] = self.session.run_id

    @pytest.hookimpl
    def pytest_xdist_node_collection_finished(self, node: Any, ids: Sequence[str]) -> None:
        """The workers' collection is final (after -k, -m, --lf): fix the selection, before
        any cell is scheduled."""
        self.session.fix_selection_from_nodeids(ids)

    @pytest.hookimpl
    def pytest_handlecrashitem(self, crashitem: str, report: Any, sched: Any) -> None:
        """A worker died while running a cell: retry it once, then record RUN_ERROR."""
        self.session.worker_crashed(crashitem, report, sched)
