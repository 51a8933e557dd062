"""A wave on remote-style xdist workers (SPEC I74): workers started with ``--tx`` in other
directories (``popen//chdir``) and on an execnet socket server on loopback run the cells
on gateways of their own, write to the session's output directory and give the same
results as one process running the same selection."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from scale_runs import SLICE, Run, clean_env, run

from pytest_sabot.commands.merge import comparable

pytestmark = pytest.mark.slow

SMALL = [*SLICE, "--sabot-config=default"]  # one baseline and its six fault cells

# execnet's socket server, started as a module: run as a script, its own directory would
# shadow the standard library's socketserver module.
SERVER = """
import sys
from execnet.gateway_base import get_execmodel
from execnet.script import socketserver as server

model = get_execmodel("thread")
server.execmodel = model
listening = server.bind_and_listen(("127.0.0.1", int(sys.argv[1])), model)
print("listening", flush=True)
server.startserver(listening, loop=True)
"""


@pytest.fixture(scope="module")
def serial(tmp_path_factory: pytest.TempPathFactory) -> Run:
    done = run(tmp_path_factory.mktemp("serial"), *SMALL, "-p", "no:xdist")
    assert done.returncode == 0, done.describe()
    return done


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture
def socket_server(tmp_path: Path) -> Iterator[int]:
    """An execnet socket server on loopback, in a directory of its own."""
    home = tmp_path / "socket-home"
    home.mkdir()
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(port)],
        cwd=home, env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "listening"
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _assert_same_as_serial(done: Run, serial: Run, gateways: int) -> None:
    assert done.returncode == 0, done.describe()
    assert comparable(done.raw) == comparable(serial.raw)
    assert done.raw["selection"]["complete"]
    assert done.raw["spend"]["gateways"] == gateways
    assert done.raw["spend"]["calls"] == serial.raw["spend"]["calls"]


def test_I74_a_wave_runs_on_popen_workers_started_in_other_directories(
    tmp_path: Path, serial: Run
) -> None:
    elsewhere = [tmp_path / "w1", tmp_path / "w2"]
    for directory in elsewhere:
        directory.mkdir()
    done = run(
        tmp_path / "controller",
        *SMALL,
        *[f"--tx=popen//chdir={d}" for d in elsewhere],
        "--dist=load",
        out=Path("out"),  # relative: the controller's directory, whatever the workers'
    )
    _assert_same_as_serial(done, serial, gateways=2)
    for directory in elsewhere:  # nothing of the wave is written where a worker started
        assert not list(directory.glob("out")) and not list(directory.glob("*.json"))
        assert not (directory / "reports").exists()


def test_I74_a_wave_runs_on_a_socket_worker_on_loopback(
    tmp_path: Path, serial: Run, socket_server: int
) -> None:
    done = run(
        tmp_path / "controller",
        *SMALL,
        f"--tx=socket=127.0.0.1:{socket_server}",
        "--tx=popen",
        "--dist=load",
        out=Path("out"),
    )
    _assert_same_as_serial(done, serial, gateways=2)
    assert not list((tmp_path / "socket-home").glob("out"))
