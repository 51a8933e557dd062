"""Usage an MCP client registers about itself, through the SDK's own stdio client
(docs/LAB.md, "Usage the client registers", MU1..MU7): consistent usage is counted per
model, inconsistent usage is kept and shown with its checks and never counted, no usage
stays none; what the lab observed stays 'unknown' beside it, never merged."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from mcp_helpers import drive, finish, lab_client, text_of, view_of

from pytest_sabot.commands.cli import main as sabot
from pytest_sabot.lab.agent import LabAgent
from pytest_sabot.lab.controllers import resilient
from pytest_sabot.lab.engine import run_scenario
from pytest_sabot.lab.record import LabRun, ProviderUsage, read_run
from pytest_sabot.lab.replay import replay_run
from pytest_sabot.lab.scenario_load import load_scenario, resolve_scenario

LOST_CREATE = load_scenario(resolve_scenario("lost-create-response"))
SAME = ("streams", "waits", "world_initial", "world_final", "coverage", "execution", "gate",
        "agent_view", "measurement")
ONE: dict[str, Any] = {"provider": "loopback", "model": "m-1", "calls": 1,
                       "input_tokens": 120, "output_tokens": 30, "cost_usd": 0.0003}
CHROMIUM = "/usr/bin/chromium"
SCREENSHOT_ENV = "SABOT_REPORT_SCREENSHOTS"


def _unknown(record: LabRun) -> None:
    assert record.measurement.provider_usage == ProviderUsage()  # unobserved, 'unknown'


def _inspect(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, dict[str, Any]]:
    capsys.readouterr()
    assert sabot(["inspect", str(path)]) == 0
    text = capsys.readouterr().out
    assert sabot(["inspect", str(path), "--json"]) == 0
    return text, json.loads(capsys.readouterr().out)


@pytest.mark.slow
def test_consistent_usage_is_counted_per_model_and_kept_apart_from_the_unknown(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "consistent"

    async def body() -> tuple[list[Any], dict[str, Any]]:
        async with lab_client(out, name="usage-client") as session:
            await view_of(session)
            first = await session.call_tool("register_usage", ONE)
            result = await drive(session, resilient)
            second = await session.call_tool("register_usage", {
                **ONE, "calls": 3, "input_tokens": 400, "output_tokens": 90,
                "cost_usd": 0.0011})
            other = await session.call_tool("register_usage", {
                "provider": "other", "model": "m-2", "calls": 1, "input_tokens": 50,
                "output_tokens": 5})
            total = {"calls": 5, "input_tokens": 570, "output_tokens": 125}
            done = await session.call_tool("finish_run", {"output": result.output,
                                                          "usage_total": total})
            return [first, second, other], json.loads(text_of(done))

    answers, evaluation = asyncio.run(body())
    assert [text_of(a) for a in answers] == ["registered, consistent"] * 3
    assert not any(a.isError for a in answers)
    record = read_run(out)
    usage = record.client_usage
    assert usage is not None and usage.status == "consistent"
    assert evaluation["client_usage"] == usage.model_dump(mode="json")
    assert [(c.provider, c.model, c.calls, c.input_tokens, c.output_tokens, c.cost_usd)
            for c in usage.counted] == [("loopback", "m-1", 4, 520, 120, pytest.approx(0.0014)),
                                        ("other", "m-2", 1, 50, 5, "unknown")]
    # two context reads (this client's and the driver's), then every request and wait
    acted = 2 + len(record.streams.requests) + len(record.waits)
    assert [e.actions_before for e in usage.entries] == [1, acted, acted]
    assert all(e.context_read and e.counted and e.failed == [] for e in usage.entries)
    assert usage.declared_total == {"calls": 5, "input_tokens": 570, "output_tokens": 125}
    _unknown(record)
    # the run itself is the same as the controller in process: usage never touches it
    alone = run_scenario(LOST_CREATE, LabAgent("in-process", "scripted", resilient), None)
    assert [p for p in SAME if getattr(record, p) != getattr(alone, p)] == []
    assert record.gate.outcome == "pass" and replay_run(record).reproduction == "verified"

    page = (out / "report.html").read_text()
    section = page[page.index('<section id="usage"'):]
    section = section[: section.index("</section>")]
    assert 'data-status="consistent"' in section
    assert section.count('data-counted="yes"') == 3 and 'data-counted="no"' not in section
    assert "loopback/m-1: 4 calls, 520 input + 120 output tokens" in section
    assert "unknown model calls, unknown prompt + unknown completion tokens" in section

    text, as_json = _inspect(out / "run.json", capsys)
    assert "usage observed by the lab (unobserved): unknown model calls" in text
    assert "usage registered by the MCP client: consistent" in text
    assert "counted other/m-2: 1 calls, 50 input + 5 output tokens, cost unknown" in text
    assert as_json["usage"]["observed"]["model_calls"] == "unknown"
    assert as_json["usage"]["client_registered"]["status"] == "consistent"
    _screenshot(out / "report.html", tmp_path, "labmcp-usage-consistent.png")


@pytest.mark.slow
def test_inconsistent_usage_is_kept_shown_with_its_checks_and_never_counted(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "inconsistent"
    sent = [
        ONE,                                                       # MU5: before the context
        None,                                                      # (read the context here)
        {**ONE, "calls": 2, "input_tokens": 1},                    # MU4
        {**ONE, "model": "m-1,m-2"},                               # MU2
        {**ONE, "calls": -3},                                      # MU3
        {**ONE, "tokens": 150},                                    # MU1
        {**ONE, "calls": 40, "input_tokens": 4000},                # MU6
        ONE,                                                       # consistent
    ]

    async def body() -> list[Any]:
        answers = []
        async with lab_client(out, name="usage-client") as session:
            for arguments in sent:
                if arguments is None:
                    await session.call_tool("get_context", {})
                    continue
                answers.append(await session.call_tool("register_usage", arguments))
            await session.call_tool("get_customer", {"customer_id": "C-104"})
            await finish(session)
        return answers

    answers = asyncio.run(body())
    expected = [["MU5"], ["MU4"], ["MU2"], ["MU3"], ["MU1"], ["MU6"], []]
    said = [text_of(a) for a in answers]
    assert [a.isError for a in answers] == [True] * 6 + [False]
    for text, rules in zip(said, expected, strict=True):
        assert text.startswith("registered, inconsistent: " + rules[0] if rules
                               else "registered, consistent")
    record = read_run(out)
    usage = record.client_usage
    assert usage is not None and usage.status == "partly_inconsistent"
    assert [[f.rule for f in e.failed] for e in usage.entries] == expected
    assert [e.arguments for e in usage.entries] == [a for a in sent if a is not None]
    assert [(c.model, c.calls) for c in usage.counted] == [("m-1", 1)]
    _unknown(record)

    page = (out / "report.html").read_text()
    section = page[page.index('<section id="usage"'):]
    section = section[: section.index("</section>")]
    for rules in expected[:-1]:
        assert f"registered, inconsistent: {rules[0]}" in section
    assert section.count('data-counted="no"') == 6 and section.count('data-counted="yes"') == 1
    assert "before the context was read" in section

    text, _ = _inspect(out, capsys)
    assert "usage registered by the MCP client: partly_inconsistent" in text
    assert "registered, inconsistent: MU6" in text and "counted loopback/m-1: 1 calls" in text
    _screenshot(out / "report.html", tmp_path, "labmcp-usage-inconsistent.png")


@pytest.mark.slow
def test_MU7_a_declared_total_that_differs_leaves_nothing_counted(tmp_path: Path) -> None:
    out = tmp_path / "total"

    async def body() -> dict[str, Any]:
        async with lab_client(out) as session:
            await view_of(session)
            await session.call_tool("register_usage", ONE)
            await session.call_tool("get_customer", {"customer_id": "C-104"})
            await session.call_tool("register_usage", ONE)
            done = await session.call_tool("finish_run", {"usage_total": {
                "calls": 3, "input_tokens": 240, "output_tokens": 60}})
            return dict(done.structuredContent or {})

    evaluation = asyncio.run(body())
    usage = read_run(out).client_usage
    assert usage is not None and usage.status == "inconsistent" and usage.counted == []
    assert [f.rule for f in usage.total_failed] == ["MU7"]
    assert "calls 3 declared, 2 registered" in usage.total_failed[0].message
    assert [e.failed for e in usage.entries] == [[], []]
    assert [e.counted for e in usage.entries] == [False, False]
    assert evaluation["client_usage"]["status"] == "inconsistent"
    page = (out / "report.html").read_text()
    assert "inconsistent: MU7" in page and "not counted: the declared total differs" in page


@pytest.mark.slow
def test_no_registered_usage_stays_none_beside_the_unknown(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "none"

    async def body() -> None:
        async with lab_client(out) as session:
            await view_of(session)
            await session.call_tool("get_customer", {"customer_id": "C-104"})
            await finish(session)

    asyncio.run(body())
    record = read_run(out)
    assert record.client_usage is not None and record.client_usage.status == "none"
    assert record.client_usage.entries == [] and record.client_usage.counted == []
    _unknown(record)
    page = (out / "report.html").read_text()
    assert 'data-status="none"' in page and "The client registered no usage" in page
    text, as_json = _inspect(out, capsys)
    assert "usage registered by the MCP client: none (nothing registered)" in text
    assert "counted: nothing" in text
    assert as_json["usage"]["client_registered"]["entries"] == []
    _screenshot(out / "report.html", tmp_path, "labmcp-usage-none.png")


@pytest.mark.slow
def test_MU5_register_usage_is_refused_after_finish_run(tmp_path: Path) -> None:
    out = tmp_path / "late"

    async def body() -> Any:
        async with lab_client(out) as session:
            await view_of(session)
            await session.call_tool("register_usage", ONE)
            await finish(session)
            return await session.call_tool("register_usage", {**ONE, "calls": 1})

    late = asyncio.run(body())
    assert late.isError and "the run is finished" in text_of(late)
    usage = read_run(out).client_usage
    assert usage is not None and [e.number for e in usage.entries] == [1]


@pytest.mark.slow
def test_a_client_that_leaves_keeps_its_registrations(tmp_path: Path) -> None:
    out = tmp_path / "left"

    async def body() -> None:
        async with lab_client(out) as session:
            await view_of(session)
            await session.call_tool("register_usage", ONE)

    asyncio.run(body())
    record = read_run(out)
    assert record.execution.status == "cancelled"
    assert record.client_usage is not None and record.client_usage.status == "consistent"
    assert record.client_usage.declared_total is None
    _unknown(record)


def test_a_run_without_an_mcp_client_has_no_client_usage(tmp_path: Path) -> None:
    record = run_scenario(LOST_CREATE, LabAgent("in-process", "scripted", resilient),
                          tmp_path)
    assert record.client_usage is None and read_run(tmp_path).client_usage is None
    assert "client_usage" in json.loads((tmp_path / "run.json").read_text())


def _screenshot(report: Path, tmp_path: Path, name: str) -> None:
    """The report's usage section in headless Chromium, no request beyond the file; kept
    under tmp_path and copied to $SABOT_REPORT_SCREENSHOTS when set."""
    if not Path(CHROMIUM).is_file():
        pytest.skip(f"Debian's chromium is not installed at {CHROMIUM}")
    sync_api = pytest.importorskip("playwright.sync_api")
    left: list[str] = []
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                     args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})

            def refuse(route: Any) -> None:
                if route.request.url.startswith(("file://", "data:")):
                    route.continue_()
                else:
                    left.append(route.request.url)
                    route.abort()

            page.route("**/*", refuse)
            page.goto(report.as_uri())
            section = page.locator("#usage")
            assert section.is_visible()
            assert "Model usage: observed and registered" in section.inner_text()
            path = tmp_path / name
            section.screenshot(path=str(path))
        finally:
            browser.close()
    assert left == [] and path.stat().st_size > 0
    stable = os.environ.get(SCREENSHOT_ENV)
    if stable:
        Path(stable).mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, Path(stable) / name)
