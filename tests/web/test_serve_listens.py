"""``sabot serve`` prints its URL only once that URL answers (issue 25, "What it does": it
prints one URL, and that URL answers). A user, or a script, that opens the URL the moment
it appears must never be refused: the socket listens before the line is printed, and a
connection made before uvicorn's loop starts waits in the backlog."""

from __future__ import annotations

import re
import signal
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn

from pytest_sabot.commands.cli import main
from pytest_sabot.commands.serve import listening_socket

PORT = re.compile(r"http://127\.0\.0\.1:(\d+)/")


@pytest.fixture
def signal_handlers() -> Iterator[None]:
    """The command installs its own SIGINT/SIGTERM handlers; give the test run its own
    back."""
    kept = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    yield
    for sig, handler in kept.items():
        signal.signal(sig, handler)


def test_serve_the_printed_url_is_listening_before_the_server_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    signal_handlers: None,
) -> None:
    """At the moment uvicorn is handed the socket, the URL is on the screen and a client
    connecting to it is already accepted by the kernel (not refused)."""
    seen: dict[str, object] = {}

    def run_in_place_of_uvicorn(self: uvicorn.Server, sockets: list[socket.socket]) -> None:
        printed = capsys.readouterr().out
        found = PORT.search(printed)
        assert found is not None, printed
        port = int(found.group(1))
        seen["port"], seen["handed"] = port, sockets[0].getsockname()[1]
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5):
                seen["connected"] = True
        except OSError as exc:  # refused: the URL was printed before the socket listened
            seen["connected"] = repr(exc)

    monkeypatch.setattr(uvicorn.Server, "run", run_in_place_of_uvicorn)
    root = tmp_path / "reports"
    root.mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SABOT_HISTORY", raising=False)
    assert main(["serve", str(root), "--port", "0"]) == 0
    assert seen == {"port": seen["handed"], "handed": seen["handed"], "connected": True}


def test_serve_a_port_in_use_is_refused_before_anything_is_printed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    signal_handlers: None,
) -> None:
    """A busy port fails with exit 2 and a message naming the address; no URL is
    printed, and the socket it tried is closed again."""
    busy = listening_socket("127.0.0.1", 0)
    try:
        port = busy.getsockname()[1]
        # a second listener on the same port: SO_REUSEADDR does not allow it on Linux
        with pytest.raises(OSError):
            listening_socket("127.0.0.1", port)
        root = tmp_path / "reports"
        root.mkdir()
        monkeypatch.chdir(tmp_path)
        assert main(["serve", str(root), "--port", str(port)]) == 2
    finally:
        busy.close()
    captured = capsys.readouterr()
    assert f"cannot listen on 127.0.0.1:{port}" in captured.err
    assert "token=" not in captured.out
