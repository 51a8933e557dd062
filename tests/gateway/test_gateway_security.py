"""The gateway is a locked door: a session secret on every request, unguessable run keys
that only their registrant holds, no browser-style request, atomic registration, and a
secret that reaches no written file and no log."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import openai
import pytest
from gateway_fakes import CANARY_KEY, FakeUpstream

from pytest_sabot.gateway import Gateway, GatewayClient, GatewayError
from pytest_sabot.gateway.client import SECRET_HEADER, split_gateway_url
from pytest_sabot.gateway.secrets import REDACTED

VICTIM = "langgraph-default-O1-T1-s11"
CHAT = {"model": "gpt-5.6-terra", "messages": [{"role": "user", "content": "hello"}]}

# A second process that knows only the port: the reproduction of the open door, step by step.
INTRUDER = r"""
import json, sys
import httpx
port, victim = int(sys.argv[1]), sys.argv[2]
base = f"http://127.0.0.1:{port}"
chat = {"model": "gpt-5.6-terra", "messages": [{"role": "user", "content": "spend for me"}]}
steps = {}
with httpx.Client(base_url=base, trust_env=False, timeout=10) as http:
    def post(name, path, body, content_type="application/json", **headers):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        r = http.post(path, content=data, headers={"Content-Type": content_type, **headers})
        steps[name] = [r.status_code, r.text]
    registration = {"cell_id": "intruder", "seed": 1, "model": "openai:gpt-5.6-terra"}
    post("register", "/sabot/runs", {**registration, "label": "intruder~a1"})
    post("register_old_form", "/sabot/runs", {**registration, "run_key": "intruder~a1"})
    for key in ("intruder~a1", f"{victim}~a1"):
        for prefix in ("", "/guessed-secret"):
            path = f"{prefix}/run/{key}/agent/worker/v1/chat/completions"
            post(f"chat_text_plain {prefix} {key}", path, json.dumps(chat).encode(), "text/plain")
            post(f"chat_json {prefix} {key}", path, chat)
    for action in ("drain", "close"):
        post(f"{action} victim", f"/sabot/runs/{victim}~a1/{action}", {})
        post(f"{action} victim guessed header", f"/sabot/runs/{victim}~a1/{action}", {},
             **{"X-Sabot-Secret": "guessed-secret"})
    steps["stats"] = [http.get("/sabot/stats").status_code, ""]
print(json.dumps(steps))
"""


def _written(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()]


def _files_holding(root: Path, *needles: str) -> list[str]:
    found = []
    for path in _written(root):
        text = path.read_text("utf-8", errors="replace")
        found += [f"{path}: {n[:12]}..." for n in needles if n in text]
    return found


@pytest.mark.slow
def test_gateway_secret_intruder_knowing_only_the_port_fails_at_every_step(
    live_gateway: Callable[..., Gateway], upstream: FakeUpstream, tmp_path: Path
) -> None:
    gw = live_gateway()
    owner = GatewayClient(gw.url)
    owner.register_run(f"{VICTIM}~a1", VICTIM, 11, "openai:gpt-5.6-terra")
    sdk = openai.OpenAI(
        base_url=owner.base_url(f"{VICTIM}~a1", "worker"), api_key="sabot-local", max_retries=0
    )
    sdk.chat.completions.create(model=CHAT["model"], messages=CHAT["messages"])
    spent_before = owner.stats().budget.spent_usd
    port = gw.origin.rsplit(":", 1)[1]
    proc = subprocess.run(
        [sys.executable, "-c", INTRUDER, port, VICTIM],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    steps: dict[str, list[Any]] = json.loads(proc.stdout)
    refused = {name: status for name, (status, _) in steps.items()}
    assert all(status in (401, 403, 415) for status in refused.values()), refused
    assert refused["register"] == 401 and refused["drain victim"] == 401
    assert refused["drain victim guessed header"] == 403
    assert all(v == 415 for k, v in refused.items() if k.startswith("chat_text_plain"))
    # Nothing forwarded, charged or recorded for the intruder; the owner's run is intact.
    assert [seen.body["messages"][0]["content"] for seen in upstream.seen] == ["hello"]
    stats = owner.stats()
    assert stats.calls == 1 and stats.runs_open == 1
    assert stats.budget.spent_usd == spent_before
    [record] = owner.drain(f"{VICTIM}~a1")
    assert record.run_key == f"{VICTIM}~a1" and record.error is None
    owner.close_run(f"{VICTIM}~a1")
    assert sorted(p.name for p in (tmp_path / "recordings").iterdir()) == [VICTIM]
    assert _files_holding(tmp_path, CANARY_KEY, gw.secret) == []
    assert all(gw.secret not in text for _, text in steps.values())


@pytest.mark.parametrize(
    ("headers", "content_type", "status", "code"),
    [
        ({"Origin": "http://evil.example"}, "application/json", 403, "sabot_browser_refused"),
        ({"Sec-Fetch-Site": "cross-site"}, "application/json", 403, "sabot_browser_refused"),
        ({"Host": "evil.example"}, "application/json", 403, "sabot_bad_host"),
        ({"Host": "127.0.0.1:1"}, "application/json", 403, "sabot_bad_host"),
        ({}, "text/plain", 415, "sabot_not_json"),
        ({}, "application/x-www-form-urlencoded", 415, "sabot_not_json"),
        ({}, "multipart/form-data; boundary=x", 415, "sabot_not_json"),
    ],
    ids=["origin", "sec-fetch", "rebound-host", "other-port", "text-plain", "form", "multipart"],
)
def test_gateway_browser_style_requests_are_refused_even_with_the_secret(
    live_gateway: Callable[..., Gateway],
    upstream: FakeUpstream,
    headers: dict[str, str],
    content_type: str,
    status: int,
    code: str,
) -> None:
    gw = live_gateway()
    owner = GatewayClient(gw.url)
    owner.register_run("b~a1", "b", 11, "openai:gpt-5.6-terra")
    url = owner.base_url("b~a1", "worker") + "/chat/completions"
    response = httpx.post(
        url,
        content=json.dumps(CHAT).encode(),
        headers={"Content-Type": content_type, **headers},
        timeout=10,
    )
    assert response.status_code == status
    assert response.json()["error"]["code"] == code
    registration = httpx.post(
        gw.origin + "/sabot/runs",
        content=json.dumps({"label": "x", "cell_id": "x", "seed": 1, "model": "sim"}).encode(),
        headers={"Content-Type": content_type, SECRET_HEADER: gw.secret, **headers},
        timeout=10,
    )
    assert registration.status_code == status
    assert upstream.seen == []
    stats = owner.stats()
    assert stats.calls == 0 and stats.runs_open == 1


ROUTES = [
    ("GET", "/sabot/health"),
    ("GET", "/sabot/stats"),
    ("POST", "/sabot/runs"),
    ("POST", "/sabot/runs/{key}/drain"),
    ("POST", "/sabot/runs/{key}/close"),
    ("POST", "/run/{key}/agent/worker/v1/chat/completions"),
    ("GET", "/run/{key}/agent/worker/v1/models"),
]


@pytest.mark.parametrize(("method", "route"), ROUTES, ids=[r for _, r in ROUTES])
def test_gateway_secret_every_route_answers_401_without_it_and_403_when_wrong(
    gateway: Gateway, method: str, route: str
) -> None:
    owner = GatewayClient(gateway.url)
    owner.register_run("r~a1", "r", 11, "script:x")
    key = owner.register_run("r2~a1", "r2", 11, "script:x")["run_key"]
    path = route.format(key=key)
    body = json.dumps(CHAT if "chat" in path else {}).encode() if method == "POST" else None
    json_header = {"Content-Type": "application/json"} if body is not None else {}
    control = path.startswith("/sabot")
    missing = httpx.request(
        method, gateway.origin + path, content=body, headers=json_header, timeout=10
    )
    assert missing.status_code == 401 and missing.json()["error"]["code"] == "sabot_no_secret"
    wrong_secret = "W" * len(gateway.secret)
    if control:
        wrong = httpx.request(
            method,
            gateway.origin + path,
            content=body,
            headers={**json_header, SECRET_HEADER: wrong_secret},
            timeout=10,
        )
        assert wrong.status_code == 403 and wrong.json()["error"]["code"] == "sabot_bad_secret"
    else:
        wrong = httpx.request(
            method, f"{gateway.origin}/{wrong_secret}{path}", content=body, headers=json_header
        )
        assert wrong.status_code == 401
    stats = owner.stats()
    assert stats.calls == 0 and stats.runs_open == 2


def test_gateway_run_keys_are_unguessable_and_only_their_registrant_drains_or_closes(
    gateway: Gateway,
) -> None:
    owner = GatewayClient(gateway.url)
    other_session = GatewayClient(gateway.url)  # holds the secret, not the run key
    label = f"{VICTIM}~a1"
    first = owner.register_run(label, VICTIM, 11, "script:x")["run_key"]
    owner.close_run(label)
    second = owner.register_run(label, VICTIM, 11, "script:x")["run_key"]
    assert first != second and label not in first and len(first) >= 32
    sdk = openai.OpenAI(base_url=owner.base_url(label, "worker"), api_key="t", max_retries=0)
    sdk.chat.completions.create(model=CHAT["model"], messages=CHAT["messages"])
    for action in (other_session.drain, other_session.close_run):
        with pytest.raises(GatewayError) as err:
            action(label)
        assert err.value.status == 404 and label not in err.value.message
    assert [r.call_index for r in owner.drain(label)] == [0]
    assert owner.close_run(label) == []


@pytest.mark.parametrize("cell_id", ["../escape", "a/b", "..", "a\\b", "", "sp ace"])
def test_gateway_registration_with_an_unusable_cell_id_is_atomic_and_names_the_field(
    live_gateway: Callable[..., Gateway], tmp_path: Path, cell_id: str
) -> None:
    gw = live_gateway()
    owner = GatewayClient(gw.url)
    with pytest.raises(GatewayError) as err:
        owner.register_run("c~a1", cell_id, 11, "openai:gpt-5.6-terra")
    assert err.value.status == 400 and err.value.code == "invalid_registration"
    assert "cell_id" in err.value.message
    assert owner.stats().runs_open == 0
    assert not (tmp_path / "recordings").exists() or _written(tmp_path / "recordings") == []
    # the label was not left half-registered: it registers cleanly now
    assert owner.register_run("c~a1", "c", 11, "openai:gpt-5.6-terra")["recording"] is True


def test_gateway_registration_whose_recording_cannot_open_leaves_no_run(
    live_gateway: Callable[..., Gateway], tmp_path: Path
) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the recordings folder should be")
    gw = live_gateway(record_dir=blocker)
    owner = GatewayClient(gw.url)
    with pytest.raises(GatewayError) as err:
        owner.register_run("c~a1", "c", 11, "openai:gpt-5.6-terra")
    assert err.value.code == "sabot_recording_failed"
    assert owner.stats().runs_open == 0
    with pytest.raises(GatewayError) as again:  # refused the same way, never a 409
        owner.register_run("c~a1", "c", 11, "openai:gpt-5.6-terra")
    assert again.value.code == "sabot_recording_failed"


def test_gateway_secret_never_reaches_a_log_record(
    gateway: Gateway, caplog: pytest.LogCaptureFixture
) -> None:
    owner = GatewayClient(gateway.url)
    owner.register_run("l~a1", "l", 11, "script:x")
    caplog.set_level(logging.DEBUG)
    sdk = openai.OpenAI(base_url=owner.base_url("l~a1", "worker"), api_key="t", max_retries=0)
    sdk.chat.completions.create(model=CHAT["model"], messages=CHAT["messages"])
    httpx.get(gateway.url + "/nothing-here", timeout=10)
    logging.getLogger("sabot.test").warning("url was %s", owner.base_url("l~a1", "worker"))
    assert any("HTTP Request" in r.getMessage() for r in caplog.records)
    assert gateway.secret not in caplog.text
    assert REDACTED in caplog.text


def test_gateway_error_texts_never_echo_the_secret(gateway: Gateway) -> None:
    for path in ("/nothing", "/run/x/agent/y/v1/completions", "/sabot/nothing"):
        response = httpx.post(
            gateway.url + path,
            json={},
            headers={SECRET_HEADER: gateway.secret},
            timeout=10,
        )
        assert response.status_code == 404
        assert gateway.secret not in response.text


def test_gateway_url_without_its_secret_is_refused_by_the_client() -> None:
    for url in ("http://127.0.0.1:8080", "http://127.0.0.1:8080/", "http://127.0.0.1/x"):
        with pytest.raises(ValueError, match="gateway URL"):
            GatewayClient(url)
    assert split_gateway_url("http://127.0.0.1:8080/abc/") == ("http://127.0.0.1:8080", "abc")


@pytest.mark.slow
def test_gateway_standalone_prints_its_secret_once_and_enforces_it(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest_sabot.gateway", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        origin, secret = split_gateway_url(url)
        client = GatewayClient(url)
        assert client.health()
        assert httpx.get(origin + "/sabot/health", timeout=10).status_code == 401
        client.register_run("s~a1", "s", 11, "sim")
        assert client.close_run("s~a1") == []
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=30)
    assert secret not in out and secret not in err  # the first line was the only one
    assert "--sabot-gateway-url" in err


# --------------------------------------------------------------------------- issue 21, item 2


def test_I117_a_run_credential_opens_its_own_runs_model_calls_and_nothing_else(
    gateway: Gateway, client: GatewayClient, run: Callable[..., str]
) -> None:
    mine, other = run(cell_id="local_agent-default-O1-T1-s11"), run(cell_id="victim-cell")
    granted = client.grant(mine, "worker")
    token = granted.api_key
    assert granted.base_path == "/v1" and token.startswith("sabot-run-")
    base = f"{gateway.origin}/v1"
    assert "local_agent" not in base and gateway.secret not in base  # names nothing
    sdk = openai.OpenAI(base_url=base, api_key=token, max_retries=0)
    reply = sdk.chat.completions.create(**CHAT)  # type: ignore[call-overload]
    assert reply.choices[0].message.content
    assert [m.id for m in sdk.models.list()] == ["terra"]
    drained = client.drain(mine)
    assert [(r.agent, r.cell_id) for r in drained] == [("worker", "local_agent-default-O1-T1-s11")]
    http = httpx.Client(base_url=gateway.origin, trust_env=False, timeout=10)
    json_body = {"Content-Type": "application/json"}
    bearer = {"Authorization": f"Bearer {token}", **json_body}
    registration = {"label": "x~a1", "cell_id": "victim-cell", "seed": 1, "model": "script:x"}
    other_key = quote(client._key(other), safe="")  # the victim's key, as if it were known
    mine_key = quote(client._key(mine), safe="")
    attempts = {
        "register as header": http.post("/sabot/runs", json=registration,
                                        headers={SECRET_HEADER: token}),
        "register as bearer": http.post("/sabot/runs", json=registration, headers=bearer),
        "stats": http.get("/sabot/stats", headers={SECRET_HEADER: token}),
        "drain own": http.post(f"/sabot/runs/{mine_key}/drain", json={},
                               headers={SECRET_HEADER: token}),
        "close other": http.post(f"/sabot/runs/{other_key}/close", json={},
                                 headers={SECRET_HEADER: token, **bearer}),
        "grant more": http.post(f"/sabot/runs/{mine_key}/grant", json={"agent": "reviewer"},
                                headers={SECRET_HEADER: token}),
        "as path secret": http.post(
            f"/{token}/run/{other_key}/agent/worker/v1/chat/completions", json=CHAT,
            headers=bearer),
        "other routes": http.post("/v1/completions", json=CHAT, headers=bearer),
        "a sabot route under v1": http.post("/v1/sabot/runs", json=registration,
                                            headers=bearer),
        "a made-up credential": http.post("/v1/chat/completions", json=CHAT,
                                          headers={**json_body,
                                                   "Authorization": "Bearer sabot-run-x"}),
        "no credential": http.post("/v1/chat/completions", json=CHAT, headers=json_body),
    }
    statuses = {name: r.status_code for name, r in attempts.items()}
    assert statuses == {
        "register as header": 403, "register as bearer": 401, "stats": 403,
        "drain own": 403, "close other": 403, "grant more": 403, "as path secret": 401,
        "other routes": 404, "a sabot route under v1": 404, "a made-up credential": 401,
        "no credential": 401,
    }
    assert client.stats().runs_open == 2 and client.drain(mine) == []  # nothing moved
    # The victim's run is untouched, and closing mine ends its credential.
    client.close_run(mine)
    with pytest.raises(openai.AuthenticationError):
        sdk.chat.completions.create(**CHAT)  # type: ignore[call-overload]
    assert client.stats().runs_open == 1


def test_I117_a_grant_names_an_open_run_of_its_registrant(
    client: GatewayClient, run: Callable[..., str]
) -> None:
    with pytest.raises(GatewayError) as err:
        client.grant("never-registered~a1", "worker")
    assert err.value.status == 404
    key = run()
    with pytest.raises(GatewayError) as err:
        client.grant(key, "../worker")
    assert err.value.status == 400 and err.value.code == "invalid_grant"
