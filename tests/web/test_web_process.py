"""``sabot serve`` as a user starts it: a real process (``python -m pytest_sabot serve``,
the console script's code), read through its own output (issue 25, "What it does"): it
prints one URL carrying a token, that URL answers, a request without the token is refused,
a non-loopback ``--host`` is warned about, and SIGINT (Ctrl-C) or SIGTERM ends it with exit
0 and no traceback."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

import pytest_sabot
from pytest_sabot.commands.serve import HOST_WARNING

pytestmark = pytest.mark.slow  # a fresh interpreter importing the web stack, per test

URL = re.compile(r"http://[^\s/]+:\d+/[^\s?]*\?token=[A-Za-z0-9_-]+")
START_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 60.0


class Served:
    def __init__(self, process: subprocess.Popen[str], lines: list[str]) -> None:
        self.process, self.lines = process, lines

    @property
    def url(self) -> str:
        found = [u for line in self.lines for u in URL.findall(line)]
        assert len(found) == 1, self.lines  # one URL, printed once
        return found[0]

    def stop(self, sig: signal.Signals) -> tuple[int, str, str]:
        self.process.send_signal(sig)
        out, err = self.process.communicate(timeout=STOP_TIMEOUT_S)
        return self.process.returncode, out, err


@contextmanager
def sabot_serve(root: Path, *options: str) -> Iterator[Served]:
    """Start ``python -m pytest_sabot serve ROOT --port 0 ...`` and read its output up to
    the URL it prints."""
    env = {**os.environ, "PYTHONPATH": str(Path(pytest_sabot.__file__).parents[1]),
           "PYTHONUNBUFFERED": "1"}
    env.pop("SABOT_HISTORY", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest_sabot", "serve", str(root), "--port", "0", *options],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=root.parent, env=env,
        start_new_session=True)
    lines: list[str] = []
    deadline = time.monotonic() + START_TIMEOUT_S
    try:
        assert process.stdout is not None
        while not any(URL.search(line) for line in lines):
            assert time.monotonic() < deadline, lines
            line = process.stdout.readline()
            assert line, f"sabot serve ended before printing its URL: {lines}"
            lines.append(line)
        lines += [process.stdout.readline(), process.stdout.readline()]  # where it opens
        yield Served(process, lines)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "reports"
    folder.mkdir()
    return folder


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_serve_process_prints_one_url_guards_it_and_stops_cleanly(
    root: Path, sig: signal.Signals
) -> None:
    with sabot_serve(root) as served:
        url = served.url
        assert url.startswith("http://127.0.0.1:")
        base, token = url.split("/?token=")
        assert len(token) >= 32
        refused = httpx.get(base + "/")  # no token
        assert refused.status_code == 401
        assert "access token" in refused.text
        wrong = httpx.get(base + "/", params={"token": token[::-1]})
        assert wrong.status_code == 401
        first = httpx.get(url)  # the URL it printed: signed in, token dropped
        assert first.status_code == 303
        assert first.headers["location"] == "/"
        page = httpx.get(base + "/", cookies=first.cookies)
        assert page.status_code == 200
        assert "Sabot inspector" in page.text
        code, out, err = served.stop(sig)
    assert code == 0, (code, out, err)
    assert "Traceback" not in err, err
    assert f"sabot serve: stopped ({sig.name})" in out
    with pytest.raises(httpx.ConnectError):
        httpx.get(base + "/", timeout=5)


def test_serve_process_warns_about_a_non_loopback_host(root: Path) -> None:
    with sabot_serve(root, "--host", "0.0.0.0") as served:
        assert served.url.startswith("http://0.0.0.0:")
        code, out, err = served.stop(signal.SIGTERM)
    assert HOST_WARNING.format(host="0.0.0.0") in err.replace("\n", " ")
    assert code == 0, (code, out, err)


def test_serve_process_on_loopback_prints_no_warning(root: Path) -> None:
    with sabot_serve(root) as served:
        code, _out, err = served.stop(signal.SIGINT)
    assert "warning" not in err
    assert code == 0


def test_serve_process_opens_on_the_newest_run(root: Path) -> None:
    """The URL leads to the run recorded last (README's first command: the wave just
    run); with no run recorded it leads to the runs list (the tests above)."""
    from pytest_sabot.history import index_output, list_runs
    from pytest_sabot.lab.controllers import resolve_agent
    from pytest_sabot.lab.engine import run_scenario
    from pytest_sabot.lab.scenario_load import load_scenario, resolve_scenario

    scenario = load_scenario(resolve_scenario("lost-create-response"))
    run_scenario(scenario, resolve_agent("builtin:naive"), root / "lab-naive")
    index_output(root, root / "history.sqlite")
    newest = list_runs(root / "history.sqlite")[0].run_id
    with sabot_serve(root) as served:
        assert f"it opens on the newest run (lab run {newest})" in "".join(served.lines)
        first = httpx.get(served.url)
        assert first.status_code == 303
        assert first.headers["location"] == f"/run/{newest}"
        page = httpx.get(served.url.split("/run/")[0] + first.headers["location"],
                         cookies=first.cookies)
        assert page.status_code == 200
        assert 'id="streams"' in page.text
        code, _out, _err = served.stop(signal.SIGTERM)
    assert code == 0
