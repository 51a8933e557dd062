"""The project's spend ledger: the cap holds for the project, across concurrent connections,
gateways in several processes, sessions and resumes; every call's worst case is reserved
before it is sent, so the provider never bills more than the cap."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from gateway_fakes import CANARY_KEY, FakeUpstream, Step

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.core.model_spec import parse_model
from pytest_sabot.gateway import Gateway, GatewayClient, GatewaySettings
from pytest_sabot.gateway.backends.openai_upstream import IMAGE_TOKENS, prompt_bound
from pytest_sabot.gateway.ledger import LEDGER_FILE, read_ledger
from pytest_sabot.gateway.prices import load_prices
from pytest_sabot.gateway.protocol import Usage

# Small output limits keep each call's worst case near its real cost, so a test cap admits
# dozens of calls; the fake upstream never bills more output than the limit.
PRICES = """\
version: 1
models:
  metered:
    input: 100.0
    cached_input: 10.0
    output: 400.0
    max_output_tokens: 120
"""


@pytest.fixture
def prices(tmp_path: Path) -> Path:
    path = tmp_path / "prices.yaml"
    path.write_text(PRICES)
    return path


def provider_bill(upstream: FakeUpstream, prices: Path) -> float:
    """What the provider billed: its own usage figures times the price table."""
    table = load_prices(prices)
    total = 0.0
    for usage in upstream.billed:
        billed = Usage(
            prompt_tokens=usage["prompt_tokens"], completion_tokens=usage["completion_tokens"]
        )
        cost = table.cost(usage["model"], billed)
        assert cost is not None
        total += cost
    return total


def _hammer(url: str, label: str, calls: int) -> list[int]:
    """One connection's worth of calls, until the cap refuses one."""
    client = GatewayClient(url)
    client.register_run(label, label.split("~")[0], 11, "openai:metered")
    endpoint = client.base_url(label, "worker") + "/chat/completions"
    statuses = []
    with httpx.Client(trust_env=False, timeout=30) as http:
        for i in range(calls):
            body = {"model": "metered", "messages": [{"role": "user", "content": f"q{i}"}]}
            statuses.append(http.post(endpoint, json=body).status_code)
            if statuses[-1] != 200:
                break
    client.close_run(label)
    return statuses


@pytest.fixture
def standalone(
    upstream: FakeUpstream, prices: Path, tmp_path: Path
) -> Iterator[Callable[[float], str]]:
    """Start gateway processes (as per-worker gateways would be) that share the ledger."""
    procs: list[subprocess.Popen[str]] = []

    def start(cap: float) -> str:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pytest_sabot.gateway",
                "--allow-live",
                "--base-url",
                upstream.url,
                "--prices",
                str(prices),
                "--budget-usd",
                str(cap),
                "--spend-ledger",
                str(tmp_path),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "OPENAI_API_KEY": CANARY_KEY},
        )
        procs.append(proc)
        assert proc.stdout is not None
        return proc.stdout.readline().strip()

    yield start
    for proc in procs:
        proc.terminate()
        proc.communicate(timeout=30)


@pytest.mark.slow
def test_S8_cap_holds_across_gateway_processes_and_concurrent_connections(
    standalone: Callable[[float], str], upstream: FakeUpstream, prices: Path, tmp_path: Path
) -> None:
    cap = 0.5
    urls = [standalone(cap), standalone(cap)]
    upstream.queue(*[Step("ok", delay_s=0.005)] * 400)
    jobs = [(urls[n % 2], f"c{n}~a1") for n in range(12)]  # six connections per gateway
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        runs = list(pool.map(lambda job: _hammer(job[0], job[1], 60), jobs))
    statuses = [s for run in runs for s in run]
    billed = provider_bill(upstream, prices)
    assert 0 < billed <= cap
    assert statuses.count(200) == len(upstream.billed)
    # Both gateways were stopped by the project's cap, though neither spent its own cap.
    for url in urls:
        stopped = [run[-1] for (where, _), run in zip(jobs, runs, strict=True) if where == url]
        assert stopped == [402] * 6
    ledger = read_ledger(tmp_path)
    assert ledger.spent_usd == pytest.approx(billed, rel=1e-9)
    assert ledger.holds == {} and ledger.unknown_usd == 0.0
    assert all(g.spent_usd < cap for g in ledger.gateways.values())
    assert sum(g.spent_usd for g in ledger.gateways.values()) == pytest.approx(billed)


@pytest.mark.slow
def test_S8_cap_holds_across_sessions_and_resumes(
    live_gateway: Callable[..., Gateway], upstream: FakeUpstream, prices: Path, tmp_path: Path
) -> None:
    def session(cap: float) -> list[int]:
        gw = live_gateway(prices_path=prices, budget_usd=cap, spend_ledger_dir=tmp_path)
        try:
            return _hammer(gw.url, "c~a1", 200)
        finally:
            gw.close()

    first = session(0.3)
    assert first[-1] == 402 and first.count(200) > 1
    spent = provider_bill(upstream, prices)
    resumed = session(0.3)  # a resume under the same cap gets nothing more
    assert resumed == [402]
    assert provider_bill(upstream, prices) == spent
    raised = session(0.6)  # raising the project cap allows the difference, no more
    assert raised.count(200) > 1
    total = provider_bill(upstream, prices)
    assert spent < total <= 0.6
    assert read_ledger(tmp_path).spent_usd == pytest.approx(total, rel=1e-9)


def test_S8_a_dead_process_hold_stays_charged(
    live_gateway: Callable[..., Gateway], upstream: FakeUpstream, prices: Path, tmp_path: Path
) -> None:
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    import socket

    (tmp_path / LEDGER_FILE).write_text(
        json.dumps(
            {
                "version": 1,
                "spent_usd": 0.1,
                "holds": {
                    "h1": {
                        "usd": 0.25,
                        "gateway": "killed",
                        "host": socket.gethostname(),
                        "pid": int(gone.stdout),
                        "since": 0.0,
                    }
                },
            }
        )
    )
    gw = live_gateway(prices_path=prices, budget_usd=0.4, spend_ledger_dir=tmp_path)
    statuses = _hammer(gw.url, "c~a1", 50)
    ledger = read_ledger(tmp_path)
    assert ledger.unknown_usd == 0.25 and ledger.unknown_calls == 1 and ledger.holds == {}
    assert 0.1 + 0.25 + provider_bill(upstream, prices) <= 0.4
    assert statuses[-1] == 402
    stats = GatewayClient(gw.url).stats().budget
    assert stats.ledger == str(tmp_path / LEDGER_FILE)
    assert stats.project_committed_usd == pytest.approx(ledger.committed_usd)


def test_S8_a_broken_ledger_is_refused_before_anything_is_spent(tmp_path: Path) -> None:
    (tmp_path / LEDGER_FILE).write_text('{"version": 1, "spent_usd": "lots"}')
    values: dict[str, Any] = {
        "sabot_model": "openai:gpt-5.6-terra",
        "sabot_budget_usd": 500.0,
        "sabot_max_connections": 8,
    }
    with pytest.raises(SabotDataError) as err:
        GatewaySettings.from_options(values, tmp_path / "wave-1")
    assert str(tmp_path / LEDGER_FILE) in str(err.value) and err.value.field == "spent_usd"
    with pytest.raises(ValueError, match="--sabot-max-connections"):
        GatewaySettings.from_options({**values, "sabot_max_connections": 0}, tmp_path / "w")


def test_S8_session_settings_put_the_ledger_beside_the_wave_output(tmp_path: Path) -> None:
    values: dict[str, Any] = {"sabot_model": "openai:gpt-5.6-terra", "sabot_budget_usd": 3.0}
    out = tmp_path / "reports" / "wave-1"
    settings = GatewaySettings.from_options(values, out)
    assert settings.spend_ledger_dir == (tmp_path / "reports").resolve()
    assert settings.budget_usd == 3.0 and settings.allow_live
    assert settings.record_dir == out / "recordings"
    chosen = GatewaySettings.from_options({**values, "sabot_spend_ledger": str(tmp_path)}, out)
    assert chosen.spend_ledger_dir == tmp_path
    keyless = GatewaySettings.from_options({"sabot_model": "sim:realistic"}, out)
    assert keyless.budget_usd is None and not keyless.allow_live and keyless.record_dir is None
    assert not (tmp_path / "reports" / LEDGER_FILE).exists()


def test_S8_a_session_builds_its_gateway_settings_from_typed_values(tmp_path: Path) -> None:
    """The session's gateway settings are built from its typed settings (no round trip
    through pytest option names); a bad value still names the option it came from."""
    out = tmp_path / "reports" / "wave-1"
    settings = GatewaySettings.for_session(
        parse_model("openai:gpt-5.6-terra"), out, budget_usd=2.5, max_connections=9,
        upstream_deadline_s=30.0, session="run-1", share=2,
    )
    assert settings.allow_live and settings.budget_usd == 2.5 and settings.max_connections == 4
    assert settings.upstream_deadline_s == 30.0 and settings.session == "run-1"
    assert settings.spend_ledger_dir == (tmp_path / "reports").resolve()
    keyless = GatewaySettings.for_session("sim", out, budget_usd=2.5)
    assert keyless.budget_usd is None and not keyless.allow_live
    with pytest.raises(ValueError, match="--sabot-upstream-deadline"):
        GatewaySettings.for_session("sim", out, upstream_deadline_s=0)
    assert GatewaySettings.from_options(
        {"sabot_model": "openai:gpt-5.6-terra", "sabot_budget_usd": 2.5,
         "sabot_max_connections": 9, "sabot_upstream_deadline": 30.0}, out,
        session="run-1", share=2,
    ) == settings


def test_S8_reservation_counts_the_prompt_and_bounds_the_completion(
    live_gateway: Callable[..., Gateway], upstream: FakeUpstream, prices: Path, tmp_path: Path
) -> None:
    body: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "héllo"}]}
    assert prompt_bound(body) == len(json.dumps(body, ensure_ascii=False).encode("utf-8"))
    image = {"type": "image_url", "image_url": {"url": "https://x/y.png"}}
    with_image = {"model": "m", "messages": [{"role": "user", "content": [image]}]}
    assert prompt_bound(with_image) > IMAGE_TOKENS
    # A cap that admits a call whose limit is small refuses the same call without one.
    gw = live_gateway(prices_path=prices, budget_usd=0.02, spend_ledger_dir=tmp_path)
    client = GatewayClient(gw.url)
    client.register_run("r~a1", "r", 11, "openai:metered")
    endpoint = client.base_url("r~a1", "worker") + "/chat/completions"
    short = {**body, "model": "metered", "max_completion_tokens": 5}
    assert httpx.post(endpoint, json=short, timeout=30).status_code == 200
    unbounded = {**body, "model": "metered"}  # held at max_output_tokens=120: $0.048
    assert httpx.post(endpoint, json=unbounded, timeout=30).status_code == 402
    assert len(upstream.seen) == 1


# --------------------------------------------------------------------------- sabot plan


def _wave1_plan(cap: float, ledger_dir: Path | None = None) -> Any:
    from pytest_sabot.commands.plan import project
    from pytest_sabot.matrix.standard import load_standard

    cells = load_standard(1).cells
    return cells, project(
        cells,
        model="openai:gpt-5.6-terra",
        prices=load_prices(),
        cap_usd=cap,
        ledger_dir=ledger_dir,
    )


def test_S8_plan_cuts_seeds_5_to_3_before_any_cell_and_names_the_selection(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from pytest_sabot.commands.cli import main

    cells, full = _wave1_plan(10_000.0)
    assert not full.cut and full.kept_seeds == (11, 12, 13, 14, 15)
    assert full.cost_usd is not None
    cells, plan = _wave1_plan(full.cost_usd * 0.8)  # over with five seeds, under with three
    assert plan.cut and not plan.over_cap
    assert plan.kept_seeds == (11, 12, 13) and plan.uncut_cost_usd == full.cost_usd
    assert plan.runs * 5 == full.runs * 3
    # no cell of the matrix is cut: every combination keeps its three seeds
    combos = {(c.framework, c.config, c.operator, c.task) for c in cells if not c.carved_out}
    assert plan.runs == 3 * len(combos)
    code = main(
        [
            "plan",
            "--sabot-wave",
            "1",
            "--sabot-model",
            "openai:gpt-5.6-terra",
            "--sabot-budget-usd",
            str(full.cost_usd * 0.8),
            "--sabot-spend-ledger",
            str(tmp_path),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "run the cut wave with: --sabot-seed=11,12,13" in out
    assert "STILL OVER" not in out
    # The selection it names plans as it says: under the cap, nothing cut.
    base = ["plan", "--sabot-wave", "1", "--sabot-model", "openai:gpt-5.6-terra",
            "--sabot-budget-usd", str(full.cost_usd * 0.8), "--sabot-spend-ledger", str(tmp_path)]
    assert main([*base, "--sabot-seed=11,12,13"]) == 0
    again = capsys.readouterr().out
    assert f"total: {plan.runs} runs" in again and "run the cut wave with" not in again
    assert main([*base, "--sabot-seed=99"]) == 2
    assert "--sabot-seed=99: '99' is not registered in wave 1 (registered: 11, 12, 13, 14, " \
        "15)" in capsys.readouterr().err
    assert main([*base, "--sabot-framework=langgrph"]) == 2
    assert "--sabot-framework=langgrph: 'langgrph' is not registered in wave 1 (registered: " \
        "autogen, crewai, langgraph)" in capsys.readouterr().err


def test_23_4_the_plan_table_fits_an_80_column_terminal() -> None:
    from pytest_sabot.report.plan import plan_lines

    _, plan = _wave1_plan(10_000.0)
    for width in (60, 80):
        lines = plan_lines(plan, "openai:gpt-5.6-terra", width)
        table = lines[lines.index(next(x for x in lines if x.startswith("row "))):][
            : 1 + len(plan.rows)]
        assert max(len(line) for line in table) <= width, table
        # every row keeps its name, runs and cost; the token columns go first
        for row, line in zip(plan.rows, table[1:], strict=True):
            assert line.startswith(row.row) and line.endswith(f"${row.cost_usd:.2f}"), line
    assert "prompt tok" in plan_lines(plan, "openai:gpt-5.6-terra", 120)[1]


def test_S8_plan_takes_the_project_spend_off_the_cap(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from pytest_sabot.commands.cli import main

    _, fresh = _wave1_plan(10_000.0)
    cap = fresh.cost_usd * 0.8
    (tmp_path / LEDGER_FILE).write_text(
        json.dumps({"version": 1, "spent_usd": cap * 0.5, "unknown_usd": cap * 0.1})
    )
    _, plan = _wave1_plan(cap, tmp_path)
    assert plan.spent_usd == pytest.approx(cap * 0.6)
    assert plan.cut and plan.over_cap  # three seeds fit the cap, not what is left of it
    argv = ["plan", "--sabot-wave", "1", "--sabot-model", "openai:gpt-5.6-terra"]
    argv += ["--sabot-budget-usd", str(cap), "--sabot-spend-ledger", str(tmp_path)]
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert "project spend so far" in out and str(tmp_path / LEDGER_FILE) in out
    assert "STILL OVER THE CAP" in out
