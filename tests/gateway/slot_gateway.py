"""One gateway in a process of its own, for the tests of the shared connection budget:

    python slot_gateway.py SLOTS_DIR CONNECTIONS UPSTREAM_URL CALLS

It starts a gateway whose 'openai:' backend is UPSTREAM_URL and whose connections are the
session budget in SLOTS_DIR, prints "ready", waits for a line on stdin, sends CALLS calls
at once, prints their statuses as JSON, and exits when stdin closes."""

from __future__ import annotations

import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from pytest_sabot.gateway import GatewayClient, GatewaySettings, start_gateway


def main(slots: str, connections: str, upstream: str, calls: str) -> None:
    gateway = start_gateway(
        GatewaySettings(
            base_url=upstream,
            allow_live=True,
            max_connections=int(connections),
            slots_dir=Path(slots),
            backoff_base_s=0.001,
            backoff_max_s=0.05,
            upstream_timeout_s=10.0,
        )
    )
    client = GatewayClient(gateway.url)
    client.register_run("c1~a1", "c1", 11, "openai:gpt-5.6-terra")
    url = client.base_url("c1~a1", "worker") + "/chat/completions"
    print("ready", flush=True)
    sys.stdin.readline()

    def call(i: int) -> int:
        body = {"model": "m", "messages": [{"role": "user", "content": f"q{i}"}]}
        return httpx.post(url, json=body, timeout=60).status_code

    with ThreadPoolExecutor(max_workers=max(1, int(calls))) as pool:
        statuses = list(pool.map(call, range(int(calls))))
    print(json.dumps(statuses), flush=True)
    sys.stdin.read()
    gateway.close()


if __name__ == "__main__":
    main(*sys.argv[1:5])
