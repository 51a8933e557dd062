"""The live model agent of the lab (``--agent openai:MODEL --live``, commands/lab_live.py):
refused without the opt-in or the key; with them, a loopback OpenAI-compatible provider
that answers with tool calls drives the helpdesk through the gateway, which forwards the
key, records the exchanges and reports the usage. The provider is a stand-in for a paid
one on 127.0.0.1; the lab, the gateway and the OpenAI SDK are the real ones."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_sabot.commands.lab import main
from pytest_sabot.lab.record import read_run

KEY = "sk-canary-lab-5e1d2c3b4a6f7e8d9c0b"


def _task(messages: list[dict[str, Any]]) -> dict[str, Any]:
    first = next(m for m in messages if m["role"] == "user")["content"]
    briefing: dict[str, Any] = json.loads(first.split("Briefing (JSON):\n", 1)[1])
    task: dict[str, Any] = briefing["task"]
    return task


def _shown(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [json.loads(m["content"]) for m in messages if m["role"] == "tool"]


Call = tuple[str, dict[str, Any]]


def careful_turn(messages: list[dict[str, Any]], notify_twice: bool) -> Call | None:
    """The next tool call of a careful model: create with a stable key (repeated after a
    timeout), read the ticket, assign at its version, notify; None when done."""
    task, shown = _task(messages), _shown(messages)
    create = {k: task[k] for k in ("customer_id", "request_key", "subject", "priority")}
    create["operation_key"] = "create-1"
    tickets = [s["result"]["ticket"] for s in shown if s.get("ok") and "ticket" in
               (s.get("result") or {})]
    if not tickets:
        return "create_ticket", create
    ticket = tickets[-1]
    notes = [s for s in shown if s.get("ok") and "notification" in (s.get("result") or {})]
    if ticket.get("assignee_id") != task["assignee_id"]:
        if len(tickets) == 1:
            return "get_ticket", {"ticket_id": ticket["ticket_id"]}
        return "assign_ticket", {"ticket_id": ticket["ticket_id"],
                                 "assignee_id": task["assignee_id"],
                                 "expected_version": ticket["version"],
                                 "operation_key": "assign-1"}
    if len(notes) < (2 if notify_twice else 1):
        return "notify_customer", {"customer_id": task["customer_id"],
                                   "ticket_id": ticket["ticket_id"],
                                   "message": task["message"],
                                   "operation_key": f"notify-{len(notes) + 1}"}
    return None


class Provider:
    """A loopback OpenAI-compatible server playing a careful model by tool calls."""

    def __init__(self, notify_twice: bool = False) -> None:
        self.seen: list[dict[str, Any]] = []
        self.auth: list[str] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.seen.append(body)
                owner.auth.append(self.headers.get("Authorization", ""))
                step = careful_turn(body["messages"], notify_twice)
                n = len(owner.seen)
                message: dict[str, Any] = {"role": "assistant", "content": None}
                if step is None:
                    message["content"] = "created, assigned and notified once"
                else:
                    message["tool_calls"] = [{"id": f"call_{n}", "type": "function",
                                              "function": {"name": step[0],
                                                           "arguments": json.dumps(step[1])}}]
                payload = json.dumps({
                    "id": f"chatcmpl-{n}", "object": "chat.completion", "created": 1,
                    "model": body["model"],
                    "choices": [{"index": 0, "message": message, "logprobs": None,
                                 "finish_reason": "stop" if step is None else "tool_calls"}],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 10,
                              "total_tokens": 110}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def provider() -> Iterator[Provider]:
    p = Provider()
    yield p
    p.close()


def test_LIVE_a_live_agent_is_refused_without_the_opt_in_and_without_the_key(
        tmp_path: Path, provider: Provider, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    args = ["run", "lost-create-response", "--agent", "openai:gpt-5.6-luna",
            "--sabot-base-url", provider.url]
    assert main([*args, "--out", str(tmp_path / "a")]) == 2
    assert "--live" in capsys.readouterr().err
    monkeypatch.delenv("OPENAI_API_KEY")
    assert main([*args, "--live", "--out", str(tmp_path / "b")]) == 2
    assert "OPENAI_API_KEY is not set" in capsys.readouterr().err
    assert provider.seen == [] and not list(tmp_path.iterdir())


def test_LIVE_a_model_drives_the_helpdesk_by_tool_calls_through_the_gateway(
        tmp_path: Path, provider: Provider, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    out = tmp_path / "live"
    code = main(["run", "lost-create-response", "--agent", "openai:gpt-5.6-luna", "--live",
                 "--sabot-base-url", provider.url, "--out", str(out)])
    record = read_run(out)
    assert code == 0 and record.gate.outcome == "pass", record.gate
    assert record.agent.name == "openai:gpt-5.6-luna" and not record.agent.fixture
    # The lost creation response (O8) was answered by repeating the stable key.
    creates = [r for r in record.streams.requests if r.tool == "create_ticket"]
    assert [r.arguments["operation_key"] for r in creates] == ["create-1", "create-1"]
    assert record.execution.output == "created, assigned and notified once"
    # The provider was reached with the key, by the gateway; it was offered the catalog.
    assert provider.auth and all(a == f"Bearer {KEY}" for a in provider.auth)
    offered = {t["function"]["name"] for t in provider.seen[0]["tools"]}
    assert offered == {c.name for c in record.agent_view.catalog} | {"wait"}
    usage = record.measurement.provider_usage
    assert usage.source == "gateway" and usage.model_calls == len(provider.seen)
    assert usage.prompt_tokens == 100 * len(provider.seen)
    recording = list((out / "recordings").rglob("exchanges.jsonl"))
    assert len(recording) == 1
    assert len(recording[0].read_text().splitlines()) == len(provider.seen)
    for path in out.rglob("*"):  # the key reaches no file the run wrote
        if path.is_file():
            assert KEY not in path.read_text(errors="replace"), path


def test_LIVE_a_live_agent_in_a_campaign_needs_the_opt_in_and_runs_with_it(
        tmp_path: Path, provider: Provider, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({
        "format_version": 1, "name": "live", "scenarios": ["lost-create-response"],
        "agents": ["builtin:resilient", "openai:gpt-5.6-luna"], "seeds": [1, 2]}))
    out = tmp_path / "campaign"
    assert main(["campaign", str(path), "--out", str(out)]) == 2
    assert f"{path}: field 'agents.1'" in capsys.readouterr().err and not out.exists()
    assert main(["campaign", str(path), "--out", str(out), "--live",
                 "--sabot-base-url", provider.url]) == 0
    summary = json.loads((out / "summary.json").read_text())
    live = [g for g in summary["groups"] if g["agent"] == "openai:gpt-5.6-luna"]
    assert len(live) == 1 and live[0]["counts"]["pass"] == 2 and live[0]["n"] == 2


def test_LS7_a_live_model_that_notifies_twice_fails_by_the_at_most_rule(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    provider = Provider(notify_twice=True)
    try:
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        code = main(["run", "lost-create-response", "--agent", "openai:gpt-5.6-luna",
                     "--live", "--sabot-base-url", provider.url, "--out", str(tmp_path)])
    finally:
        provider.close()
    record = read_run(tmp_path)
    assert code == 1 and "LS7" in [v.rule for v in record.gate.violations]


def test_LIVE_a_model_the_price_table_cannot_budget_is_refused(
        tmp_path: Path, provider: Provider, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    assert main(["run", "lost-create-response", "--agent", "openai:no-such-model", "--live",
                 "--sabot-base-url", provider.url, "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "sabot_unpriced_model" in err and "Traceback" not in err
    assert provider.seen == []
