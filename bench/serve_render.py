"""The local inspector's two heavy pages, over real HTTP on 127.0.0.1, from one run:

  runs list   GET / over a history of N recorded runs (default 1,000: copies of one keyless
              lab run, each its own run id, indexed as a root of runs is)
  wave page   GET /run/ID of a whole wave-1 run (1,050 cells). Building its view reads
              every cell's trace: the server does that for the page its URL opens on (the
              newest run) as it starts. Reported: the first request made the moment the
              server listens (it waits for that build), the first one after it, the median
              of later ones (the page is kept rendered while results.json is unchanged;
              only the run's actions are rendered per request), the first after the
              history changed (a run recorded: what the page reads from it is read
              again), and one cell's page.

Times are reported, never asserted (the issue's target: each under 500 ms on this machine).
The wave page needs a recorded wave: README's first command writes reports/wave-1 (about
1.5 minutes on 2 cores); without it that part is skipped and says so.

Usage: python bench/serve_render.py [--runs 1000] [--wave-dir reports/wave-1] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
from pathlib import Path

import httpx
import uvicorn

from pytest_sabot.core.paths import standard_root
from pytest_sabot.history import index_output, list_runs
from pytest_sabot.lab.controllers import resolve_agent
from pytest_sabot.lab.engine import run_scenario
from pytest_sabot.lab.record import read_run
from pytest_sabot.lab.scenario_load import load_scenario, resolve_scenario
from pytest_sabot.web import ServeConfig, create_app
from pytest_sabot.web.routes import State


def _serve(root: Path, history: Path) -> tuple[uvicorn.Server, ServeConfig, threading.Thread,
                                              State]:
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = ServeConfig(root=root, history=history, standard=standard_root(), project=root,
                         port=sock.getsockname()[1], read_only=True)
    app = create_app(config)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    return server, config, thread, app.state.sabot


def _warmed(state: State, kind: str) -> None:
    """Wait until the server's start-up build has put a page of ``kind`` in its cache."""
    while not any(key[0] == kind for key in list(state.cache)):
        time.sleep(0.05)


def _record_another(root: Path, history: Path) -> None:
    """One more lab run recorded in ``history`` (its folder under a temporary directory)."""
    with tempfile.TemporaryDirectory(dir=root) as tmp:
        scenario = load_scenario(resolve_scenario("lost-create-response"))
        run_scenario(scenario, resolve_agent("builtin:naive"), Path(tmp) / "lab")
        index_output(Path(tmp), history)


def _one(client: httpx.Client, path: str) -> float:
    start = time.perf_counter()
    answer = client.get(path)
    assert answer.status_code == 200, answer.text[:500]
    return 1000 * (time.perf_counter() - start)


def _times(client: httpx.Client, path: str, repeat: int) -> tuple[float, float, int]:
    """(first request ms, median of the next ``repeat`` ms, bytes)."""
    start = time.perf_counter()
    first = client.get(path)
    cold = 1000 * (time.perf_counter() - start)
    assert first.status_code == 200, first.text[:500]
    warm = []
    for _ in range(repeat):
        start = time.perf_counter()
        client.get(path)
        warm.append(1000 * (time.perf_counter() - start))
    return cold, statistics.median(warm), len(first.content)


def _client(config: ServeConfig) -> httpx.Client:
    return httpx.Client(base_url=f"http://127.0.0.1:{config.port}", timeout=120,
                        headers={"Authorization": f"Bearer {config.token}"})


def runs_list(n: int, repeat: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "reports"
        first = root / "lab-0000"
        scenario = load_scenario(resolve_scenario("lost-create-response"))
        run_scenario(scenario, resolve_agent("builtin:naive"), first)
        record = read_run(first / "run.json")
        made = time.perf_counter()
        for i in range(1, n):
            out = root / f"lab-{i:04d}"
            out.mkdir()
            copy = record.model_copy(update={"run_id": f"{record.run_id}-{i:04d}"})
            (out / "run.json").write_text(copy.model_dump_json(indent=2))
        index_output(root, root / "history.sqlite")
        indexed_s = time.perf_counter() - made
        assert len(list_runs(root / "history.sqlite")) == n
        server, config, thread, _state = _serve(root, root / "history.sqlite")
        try:
            with _client(config) as client:
                cold, warm, size = _times(client, "/", repeat)  # the first: at start
                filtered = _one(client, "/?label=keyless")  # another filter: built anew
        finally:
            server.should_exit = True
            thread.join(10)
    return {"runs": n, "index_s": round(indexed_s, 1), "at_start_ms": round(cold, 1),
            "median_ms": round(warm, 1), "new_filter_ms": round(filtered, 1), "bytes": size}


def wave_page(wave_dir: Path, repeat: int) -> dict[str, object]:
    results = json.loads((wave_dir / "results.json").read_text())
    with tempfile.TemporaryDirectory() as tmp:
        history = Path(tmp) / "history.sqlite"
        index_output(wave_dir, history)
        run_id = list_runs(history)[0].run_id
        server, config, thread, state = _serve(wave_dir.parent, history)
        try:
            with _client(config) as client:
                at_start = _one(client, f"/run/{run_id}")  # waits for the start-up build
            assert state.cache
        finally:
            server.should_exit = True
            thread.join(10)
        server, config, thread, state = _serve(wave_dir.parent, history)
        try:
            _warmed(state, "wave")
            with _client(config) as client:
                cold, warm, size = _times(client, f"/run/{run_id}", repeat)
                before = state.history_stamp()
                _record_another(wave_dir.parent, history)  # the history changes
                assert state.history_stamp() != before
                changed = _one(client, f"/run/{run_id}")
                cell = results["cells"][len(results["cells"]) // 2]["cell_id"]
                c_cold, c_warm, _ = _times(client, f"/run/{run_id}/cell/{cell}.html", repeat)
        finally:
            server.should_exit = True
            thread.join(10)
    return {"cells": len(results["cells"]), "at_start_ms": round(at_start, 1),
            "first_ms": round(cold, 1), "median_ms": round(warm, 1),
            "history_changed_ms": round(changed, 1),
            "bytes": size, "cell_first_ms": round(c_cold, 1),
            "cell_median_ms": round(c_warm, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--wave-dir", type=Path, default=Path("reports/wave-1"))
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print("runs list:", json.dumps(runs_list(args.runs, args.repeat)), flush=True)
    if (args.wave_dir / "results.json").is_file():
        print("wave page:", json.dumps(wave_page(args.wave_dir, args.repeat)))
    else:
        print(f"wave page: skipped, no {args.wave_dir}/results.json (run pytest --sabot-wave=1 "
              "-n auto first, or give --wave-dir)")


if __name__ == "__main__":
    main()
