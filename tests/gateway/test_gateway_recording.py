"""Recording of live exchanges per cell, byte-identical replay, mismatch errors, and
secrets that never reach a written file or a served response."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from gateway_fakes import CANARY_KEY, FakeUpstream, Step

from pytest_sabot.gateway import Gateway, GatewayClient, GatewaySettings, start_gateway
from pytest_sabot.gateway.recording import read_recording
from pytest_sabot.gateway.secrets import REDACTED, Scrubber

CLIENT_TOKEN = "canary-client-token-93ab71"

REQUESTS: list[tuple[str, dict[str, Any]]] = [
    ("worker", {"model": "gpt-5.6-terra", "messages": [{"role": "user", "content": "draft"}]}),
    (
        "worker",
        {
            "model": "gpt-5.6-terra",
            "stream": True,
            "stream_options": {"include_usage": True},
            "messages": [{"role": "user", "content": "draft again, streamed " * 4}],
        },
    ),
    (
        "reviewer",
        {
            "model": "gpt-5.6-terra",
            "messages": [{"role": "user", "content": "review"}],
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": "check",
                        "parameters": {
                            "type": "object",
                            "properties": {"claim": {"type": "string"}},
                        },
                    },
                }
            ],
        },
    ),
]


def _play(
    client: GatewayClient, key: str, requests: list[tuple[str, dict[str, Any]]]
) -> list[tuple[int, bytes]]:
    out = []
    for agent, body in requests:
        response = httpx.post(
            client.base_url(key, agent) + "/chat/completions",
            json=body,
            timeout=30,
            headers={"Authorization": f"Bearer {CLIENT_TOKEN}"},
        )
        out.append((response.status_code, response.content))
    return out


def _record_cell(gw: Gateway, cell: str = "langgraph-default-O4-T1-s11") -> list[tuple[int, bytes]]:
    client = GatewayClient(gw.url)
    client.register_run(f"{cell}~a1", cell, 11, "openai:gpt-5.6-terra")
    served = _play(client, f"{cell}~a1", REQUESTS)
    client.close_run(f"{cell}~a1")
    return served


def test_live_exchanges_are_recorded_per_cell(live_gateway: Callable[..., Gateway]) -> None:
    gw = live_gateway()
    _record_cell(gw)
    rows = read_recording(gw.settings.record_dir, "langgraph-default-O4-T1-s11")  # type: ignore[arg-type]
    assert [(r.record.agent, r.record.call_index) for r in rows] == [
        ("worker", 0),
        ("worker", 1),
        ("reviewer", 0),
    ]
    assert all(r.record.model_served == "openai:gpt-5.6-terra" for r in rows)
    assert all(r.record.prompt_tokens and r.record.cost_usd for r in rows)
    assert rows[1].request["stream"] is True and rows[1].response is not None


def test_a_retried_attempt_replaces_the_cells_recording(
    live_gateway: Callable[..., Gateway],
) -> None:
    gw = live_gateway()
    client = GatewayClient(gw.url)
    cell = "crewai-default-O1-T2-s12"
    client.register_run(f"{cell}~a1", cell, 12, "openai:gpt-5.6-terra")
    _play(client, f"{cell}~a1", REQUESTS)
    client.close_run(f"{cell}~a1")
    client.register_run(f"{cell}~a2", cell, 12, "openai:gpt-5.6-terra")
    _play(client, f"{cell}~a2", REQUESTS[:1])
    client.close_run(f"{cell}~a2")
    rows = read_recording(gw.settings.record_dir, cell)  # type: ignore[arg-type]
    assert [r.record.run_key for r in rows] == [f"{cell}~a2"]


def test_replay_serves_byte_identical_responses(
    live_gateway: Callable[..., Gateway], tmp_path: Path
) -> None:
    gw = live_gateway()
    live = _record_cell(gw)
    replay = start_gateway(GatewaySettings())
    try:
        client = GatewayClient(replay.url)
        cell = "langgraph-default-O4-T1-s11"
        client.register_run(f"{cell}~a1", cell, 11, f"replay:{tmp_path / 'recordings'}")
        replayed = _play(client, f"{cell}~a1", REQUESTS)
        records = client.drain(f"{cell}~a1")
    finally:
        replay.close()
    assert [s for s, _ in live] == [200, 200, 200]
    assert replayed == live
    assert [r.model_served for r in records] == ["openai:gpt-5.6-terra"] * 3
    assert all(r.cost_usd == 0.0 for r in records)


def test_replay_mismatch_names_cell_agent_call_index_and_the_differing_part(
    live_gateway: Callable[..., Gateway], tmp_path: Path
) -> None:
    _record_cell(live_gateway())
    replay = start_gateway(GatewaySettings())
    try:
        client = GatewayClient(replay.url)
        cell = "langgraph-default-O4-T1-s11"
        client.register_run(f"{cell}~a1", cell, 11, f"replay:{tmp_path / 'recordings'}")
        changed = json.loads(json.dumps(REQUESTS[0][1]))
        changed["messages"][0]["content"] = "a different draft"
        [(status, body)] = _play(client, f"{cell}~a1", [("worker", changed)])
        extra = _play(client, f"{cell}~a1", [("critic", REQUESTS[0][1])])
    finally:
        replay.close()
    assert status == 409
    message = json.loads(body)["error"]["message"]
    assert f"cell {cell}" in message and "agent worker" in message and "call index 0" in message
    assert "messages[0].content" in message
    error = json.loads(extra[0][1])["error"]
    assert extra[0][0] == 409 and error["code"] == "sabot_replay_mismatch"
    assert "agent critic" in error["message"] and "no recorded exchange" in error["message"]


def test_canary_key_appears_in_no_written_file_and_no_served_response(
    live_gateway: Callable[..., Gateway], upstream: FakeUpstream, tmp_path: Path
) -> None:
    gw = live_gateway()
    client = GatewayClient(gw.url)
    cell = "autogen-guardrail-O2-T3-s13"
    client.register_run(f"{cell}~a1", cell, 13, "openai:gpt-5.6-terra")
    upstream.queue(Step("echo_auth"), Step("status", 400))
    leaky = {
        "model": "gpt-5.6-terra",
        "messages": [
            {"role": "user", "content": f"my key is {CANARY_KEY} and token {CLIENT_TOKEN}"}
        ],
    }
    served = _play(client, f"{cell}~a1", [("worker", leaky), ("worker", leaky)])
    drained = client.close_run(f"{cell}~a1")
    assert upstream.seen[0].headers["Authorization"] == f"Bearer {CANARY_KEY}"
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert written, "the live run should have written a recording"
    for path in written:
        text = path.read_text(encoding="utf-8", errors="replace")
        assert CANARY_KEY not in text and CLIENT_TOKEN not in text, path
        assert "sk-canary" not in text
    for _, body in served:
        assert CANARY_KEY.encode() not in body and CLIENT_TOKEN.encode() not in body
    assert REDACTED in drained[0].response_text
    assert all(CANARY_KEY not in r.model_dump_json() for r in drained)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Authorization: Bearer abc.def-123", f"Authorization: {REDACTED}"),
        ("key sk-proj-AbC123_xyz-987 end", f"key {REDACTED} end"),
        ("the known secret-value-42 here", f"the known {REDACTED} here"),
        ("nothing to hide, sk- alone", "nothing to hide, sk- alone"),
    ],
)
def test_scrubber_removes_known_keys_bearer_and_sk_patterns(text: str, expected: str) -> None:
    scrubber = Scrubber(["secret-value-42"])
    assert scrubber.text(text) == expected
    assert scrubber.value({"a": [text]}) == {"a": [expected]}
