"""``local:<model>@<url>``: a local OpenAI-compatible server in one flag (SPEC I153), against
loopback fakes shaped like Ollama, llama.cpp's server and vLLM (local_fakes.py): no key is
sent, nothing is paid, tokens are counted when the server reports them, the client may
stream or not, and the exchanges are recorded for replay as a live model's are."""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from local_fakes import SHAPES, LocalServerFake

from pytest_sabot.core.model_spec import downgrade_target, parse_model
from pytest_sabot.gateway import Gateway, GatewayClient, GatewaySettings, start_gateway
from pytest_sabot.results.build import model_label

openai = pytest.importorskip("openai")

REQUEST = [{"role": "user", "content": "Say hello."}]


def _hello(body: dict[str, object]) -> dict[str, object]:
    return {"role": "assistant", "content": "Hello from the local model."}


_cells = itertools.count()


@pytest.fixture(scope="module")
def recordings(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("local") / "recordings"


@pytest.fixture(scope="module")
def gateway(recordings: Path) -> Iterator[Gateway]:
    """One gateway for the module, recording as a session with a local model does."""
    gw = start_gateway(GatewaySettings(record_dir=recordings))
    yield gw
    gw.close()


@pytest.fixture(scope="module", params=SHAPES)
def fake(request: pytest.FixtureRequest) -> Iterator[LocalServerFake]:
    server = LocalServerFake(request.param, answer=_hello)
    yield server
    server.close()


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_I153_a_local_server_answers_through_the_gateway_keyless_and_free(
    fake: LocalServerFake, stream: bool, gateway: Gateway, recordings: Path
) -> None:
    client = GatewayClient(gateway.url)
    spec = f"local:qwen2.5:7b@{fake.url}"
    cell = f"cell{next(_cells)}"
    client.register_run(f"{cell}~a1", cell, 11, spec)
    sdk = openai.OpenAI(base_url=client.base_url(f"{cell}~a1", "worker"), api_key="per-run",
                        max_retries=0)
    before = len(fake.seen)
    if stream:
        chunks = sdk.chat.completions.create(model="gpt-5.6-terra", messages=REQUEST,
                                             stream=True)
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    else:
        reply = sdk.chat.completions.create(model="gpt-5.6-terra", messages=REQUEST)
        text = reply.choices[0].message.content or ""
    assert text == "Hello from the local model."
    [(headers, body)] = fake.seen[before:]
    assert "authorization" not in headers  # no key, not even the per-run token
    assert body["model"] == "qwen2.5:7b" and "stream" not in body
    [record] = client.close_run(f"{cell}~a1")
    assert record.cost_usd == 0.0 and not record.fixture and record.error is None
    assert record.model_served == spec
    if fake.shape == "bare":
        assert record.prompt_tokens is None and record.completion_tokens is None
    else:
        assert record.prompt_tokens and record.completion_tokens
    recorded = (recordings / cell / "exchanges.jsonl").read_text()
    assert json.loads(recorded.splitlines()[0])["record"]["model_served"] == spec


def test_I153_a_local_spec_names_a_model_and_an_http_url() -> None:
    spec = parse_model("local:qwen2.5:7b@http://127.0.0.1:11434/v1")
    assert (spec.local_model, spec.local_url) == ("qwen2.5:7b", "http://127.0.0.1:11434/v1")
    assert spec.is_local and spec.costs_nothing and not spec.is_live and not spec.is_sim
    assert model_label(spec).startswith("local model qwen2.5:7b as served by "
                                        "http://127.0.0.1:11434/v1")
    for bad in ("local:qwen2.5", "local:@http://127.0.0.1:1/v1", "local:m@ftp://x"):
        with pytest.raises(ValueError, match="expected 'local:<model>@<base url>'"):
            parse_model(bad)
    # O4's downgrade is a model of the same server, unless a whole spec is named.
    assert downgrade_target("qwen2.5:0.5b", spec).text == (
        "local:qwen2.5:0.5b@http://127.0.0.1:11434/v1")
    assert downgrade_target("sim:credulous", spec).is_sim


class _Busy:
    """An answer that takes a while and counts how many calls the server holds at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = 0
        self.most = 0

    def __call__(self, body: dict[str, object]) -> dict[str, object]:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        time.sleep(0.3)
        with self.lock:
            self.now -= 1
        return _hello(body)


def test_I153_local_calls_hold_a_slot_of_max_connections() -> None:
    """--sabot-max-connections caps what a local server is sent at once, as it caps a live
    provider's calls: six callers at once through a gateway of two connections."""
    busy = _Busy()
    server = LocalServerFake("ollama", answer=busy)
    gw = start_gateway(GatewaySettings(max_connections=2))
    try:
        client = GatewayClient(gw.url)
        spec = f"local:qwen2.5:7b@{server.url}"

        def call(n: int) -> str:
            client.register_run(f"busy{n}~a1", f"busy{n}", 11, spec)
            sdk = openai.OpenAI(base_url=client.base_url(f"busy{n}~a1", "worker"),
                                api_key="per-run", max_retries=0)
            reply = sdk.chat.completions.create(model="gpt-5.6-terra", messages=REQUEST)
            client.close_run(f"busy{n}~a1")
            return reply.choices[0].message.content or ""

        with ThreadPoolExecutor(max_workers=6) as pool:
            answers = list(pool.map(call, range(6)))
    finally:
        gw.close()
        server.close()
    assert answers == ["Hello from the local model."] * 6
    assert len(server.seen) == 6
    assert busy.most == 2
