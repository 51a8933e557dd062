"""A gateway per xdist worker (SPEC I71): each worker serves its cells from a gateway in
its own process with its own session secret, the controller starts none when it runs no
cell, the spend cap is one account every worker's gateway charges, a cap that stops one
worker stops the session, live recordings stay one directory per cell, and a replay runs
per worker."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from live_provider import FakeProvider
from live_sessions import MODEL, TINY_BUDGET_USD, canary_key
from scale_runs import SLICE, run, verdicts

from pytest_sabot.gateway.ledger import read_ledger

pytestmark = pytest.mark.slow

# Every process of the session writes where it is and which gateway it sees; the cells'
# tests run beside test_here.py, so the conftest is loaded by the workers too.
WHERE_CONFTEST = '''
import hashlib, json, os, threading
from pathlib import Path
import pytest

HERE = Path(__file__).parent

def _write(name, data):
    (HERE / "where").mkdir(exist_ok=True)
    (HERE / "where" / name).write_text(json.dumps(data))

@pytest.fixture(scope="session", autouse=True)
def _where(request):
    config = request.config
    if hasattr(config, "workerinput"):
        url = request.getfixturevalue("sabot_gateway").url
        _write(config.workerinput["workerid"] + ".json", {
            "pid": os.getpid(),
            "ppid": os.getppid(),
            "secret": hashlib.sha256(url.encode()).hexdigest(),
            "threads": sorted(t.name for t in threading.enumerate()),
        })
    yield

def pytest_sessionfinish(session):
    if not hasattr(session.config, "workerinput"):
        _write("controller.json", {
            "pid": os.getpid(),
            "threads": sorted(t.name for t in threading.enumerate()),
        })
'''


def _where(cwd: Path) -> dict[str, dict[str, Any]]:
    return {p.stem: json.loads(p.read_text()) for p in sorted((cwd / "where").glob("*.json"))}


def test_I71_each_worker_serves_its_cells_from_a_gateway_in_its_own_process(
    tmp_path: Path,
) -> None:
    cwd = tmp_path / "workers"
    cwd.mkdir()
    (cwd / "conftest.py").write_text(WHERE_CONFTEST)
    (cwd / "test_here.py").write_text("def test_here():\n    pass\n")
    done = run(cwd, *SLICE, "-n", "2", "test_here.py")
    assert done.returncode == 0, done.describe()
    where = _where(cwd)
    workers = {k: v for k, v in where.items() if k != "controller"}
    assert sorted(workers) == ["gw0", "gw1"], where
    controller = where["controller"]
    # the gateway's server thread runs in each worker, none in the controller
    assert all("sabot-gateway" in w["threads"] for w in workers.values())
    assert "sabot-gateway" not in controller["threads"]
    assert {w["ppid"] for w in workers.values()} == {controller["pid"]}
    assert len({w["pid"] for w in workers.values()}) == 2
    # each worker's gateway has a secret of its own
    assert len({w["secret"] for w in workers.values()}) == 2
    spend = done.raw["spend"]
    assert spend["gateways"] == 2 and spend["fixture_calls"] == spend["calls"] > 0


def test_I71_a_session_without_workers_runs_its_cells_on_the_controllers_gateway(
    tmp_path: Path,
) -> None:
    cwd = tmp_path / "serial"
    cwd.mkdir()
    (cwd / "conftest.py").write_text(WHERE_CONFTEST)
    (cwd / "test_here.py").write_text("def test_here():\n    pass\n")
    done = run(cwd, *SLICE, "--sabot-config=default", "-n", "0", "test_here.py")
    assert done.returncode == 0, done.describe()
    assert "sabot-gateway" in _where(cwd)["controller"]["threads"]
    assert done.raw["spend"]["gateways"] == 1


LIVE_SLICE = [*SLICE, "--sabot-operator=baseline,O1", f"--sabot-model={MODEL}"]


def _billed(served: list[dict[str, Any]]) -> float:
    from pytest_sabot.gateway.prices import load_prices
    from pytest_sabot.gateway.protocol import Usage

    prices = load_prices()
    total = 0.0
    for entry in served:
        if entry["status"] == 200:
            usage = Usage(
                prompt_tokens=entry["usage"]["prompt_tokens"],
                completion_tokens=entry["usage"]["completion_tokens"],
            )
            cost = prices.cost(entry["model"], usage)
            assert cost is not None
            total += cost
    return total


def test_I71_a_cap_reached_in_one_worker_stops_every_worker_and_is_never_passed(
    tmp_path: Path,
) -> None:
    key = canary_key()
    with FakeProvider(key, persona="vigilant", seed=11) as provider:
        done = run(
            tmp_path / "tiny",
            *LIVE_SLICE,
            f"--sabot-base-url={provider.url}",
            f"--sabot-budget-usd={TINY_BUDGET_USD}",
            "-n",
            "2",
            env={"OPENAI_API_KEY": key},
        )
        served = provider.log()
    assert done.returncode == pytest.ExitCode.INTERRUPTED, done.describe()
    results = done.raw
    assert results["session"]["status"] == "budget-stopped"
    not_run = {c["cell_id"]: c["reason"] for c in results["selection"]["not_run"]}
    assert not_run and set(not_run.values()) == {"budget"}
    assert _billed(served) <= TINY_BUDGET_USD
    ledger = read_ledger(done.out.parent / "reports")  # an output made in the working dir
    mine = [g for g in ledger.gateways.values() if g.session == results["session"]["run_id"]]
    assert len(mine) == 2  # one account, a gateway in each worker
    assert any(g.stopped for g in mine)
    assert ledger.holds == {}
    assert ledger.spent_usd == pytest.approx(_billed(served), rel=1e-9)
    assert results["spend"]["gateways"] == 2 and results["spend"]["budget"]["exhausted"]
    assert results["spend"]["budget"]["spent_usd"] == pytest.approx(ledger.spent_usd, rel=1e-9)


def test_I71_workers_record_one_directory_per_cell_and_a_replay_runs_per_worker(
    tmp_path: Path,
) -> None:
    key = canary_key()
    with FakeProvider(key, persona="vigilant", seed=11) as provider:
        live = run(
            tmp_path / "live",
            *LIVE_SLICE,
            f"--sabot-base-url={provider.url}",
            "--sabot-budget-usd=25",
            "-n",
            "2",
            env={"OPENAI_API_KEY": key},
        )
    assert live.returncode == 0, live.describe()
    recorded = sorted(p.parent.name for p in (live.out / "recordings").glob("*/exchanges.jsonl"))
    assert recorded == sorted(c.cell_id for c in live.results.cells)
    assert not list((live.out / "recordings").rglob("*.partial"))
    replay = run(
        tmp_path / "replay",
        *[a for a in LIVE_SLICE if not a.startswith("--sabot-model")],
        "--sabot-model=replay:../live/out/recordings",  # relative to the session's directory
        "-n",
        "2",
    )
    assert replay.returncode == 0, replay.describe()
    assert replay.raw["spend"]["gateways"] == 2
    assert verdicts(replay.results) == verdicts(live.results)
