"""Added latency and throughput of the gateway on loopback, from one run.

Compares, for the same requests:
  direct      the backend called in-process (the embedded model's respond())
  gateway     the same backend behind the gateway, over HTTP with a keep-alive client
  stream      the same through the gateway with stream=True (SSE built by the gateway)
  upstream    a loopback stub upstream called directly vs through an 'openai:' run
and prints p50/p99 per call, the added latency (gateway minus direct) and calls/s
(sequential and with 8 client threads). The gateway and the stub upstream run in their own
processes (as under xdist, where workers reach the controller's gateway over HTTP), so the
client's threads do not share an interpreter lock with the server.

Usage: python bench/gateway_latency.py [--calls 400]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

from pytest_sabot.gateway import GatewayClient


def _request(i: int) -> dict[str, Any]:
    return {
        "model": "gpt-5.6-terra",
        "messages": [
            {"role": "system", "content": "You are the reviewer of a research summary."},
            {"role": "user", "content": f"Review draft number {i} and end with a verdict line."},
        ],
    }


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _timed(fn: Callable[[int], Any], calls: int) -> list[float]:
    out = []
    for i in range(calls):
        start = time.perf_counter()
        fn(i)
        out.append((time.perf_counter() - start) * 1000.0)
    return out


def _throughput(fn: Callable[[int], Any], calls: int, threads: int) -> float:
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(fn, range(calls)))
    return calls / (time.perf_counter() - start)


def _row(name: str, ms: list[float]) -> str:
    return (
        f"{name:<22} p50 {statistics.median(ms):8.3f} ms   p99 {_percentile(ms, 0.99):8.3f} ms"
        f"   mean {statistics.fmean(ms):8.3f} ms"
    )


class _Stub(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    body = json.dumps(
        {
            "id": "chatcmpl-stub",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": "VERDICT: APPROVE"},
                }
            ],
            "usage": {"prompt_tokens": 40, "completion_tokens": 5, "total_tokens": 45},
        }
    ).encode()

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)


def _serve_stub() -> None:
    stub = ThreadingHTTPServer(("127.0.0.1", 0), _Stub)
    stub.daemon_threads = True
    print(f"http://127.0.0.1:{stub.server_address[1]}/v1", flush=True)
    stub.serve_forever()


def _spawn(args: list[str], env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, *args], stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--serve-stub", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.serve_stub:
        _serve_stub()
        return
    calls = options.calls

    from pytest_sabot.sim.engine import respond

    def direct(i: int) -> Any:
        return respond(
            _request(i),
            persona="realistic",
            seed=11,
            run_key="bench~a1",
            agent="reviewer",
            call_index=i,
        )

    env = {**os.environ, "OPENAI_API_KEY": "sk-bench-not-a-real-key-000000"}
    ledger = tempfile.TemporaryDirectory(prefix="sabot-bench-ledger-")
    stub, stub_url = _spawn([__file__, "--serve-stub"], env)
    gateway, gateway_url = _spawn(
        [
            "-m",
            "pytest_sabot.gateway",
            "--allow-live",
            "--base-url",
            stub_url,
            "--max-connections",
            "16",
            "--spend-ledger",  # the stub's calls are charged to a throwaway ledger
            ledger.name,
        ],
        env,
    )
    client = GatewayClient(gateway_url)
    http = httpx.Client(timeout=30, limits=httpx.Limits(max_keepalive_connections=16))
    try:
        client.register_run("bench~a1", "bench", 11, "sim:realistic")
        client.register_run("live~a1", "live", 11, "openai:gpt-5.6-terra")
        sim_url = client.base_url("bench~a1", "reviewer") + "/chat/completions"
        live_url = client.base_url("live~a1", "reviewer") + "/chat/completions"

        def via_gateway(i: int) -> Any:
            return http.post(sim_url, json=_request(i)).raise_for_status()

        def via_gateway_stream(i: int) -> Any:
            body = {**_request(i), "stream": True, "stream_options": {"include_usage": True}}
            return http.post(sim_url, json=body).raise_for_status()

        def upstream_direct(i: int) -> Any:
            return http.post(stub_url + "/chat/completions", json=_request(i)).raise_for_status()

        def upstream_via_gateway(i: int) -> Any:
            return http.post(live_url, json=_request(i)).raise_for_status()

        for fn in (direct, via_gateway, upstream_direct, upstream_via_gateway):
            _timed(fn, 20)  # warm up imports, connections, caches
        results = {
            "sim direct": _timed(direct, calls),
            "sim via gateway": _timed(via_gateway, calls),
            "sim via gateway (SSE)": _timed(via_gateway_stream, calls),
            "upstream direct": _timed(upstream_direct, calls),
            "upstream via gateway": _timed(upstream_via_gateway, calls),
        }
        print(
            f"gateway latency, {calls} sequential calls each, loopback, gateway in its own process"
        )
        for name, ms in results.items():
            print(_row(name, ms))
        added_sim = statistics.median(results["sim via gateway"]) - statistics.median(
            results["sim direct"]
        )
        added_up = statistics.median(results["upstream via gateway"]) - statistics.median(
            results["upstream direct"]
        )
        print(f"added latency p50 (sim):      {added_sim:8.3f} ms per call")
        print(f"added latency p50 (upstream): {added_up:8.3f} ms per call")
        print("throughput (calls/s):")
        for name, fn in (
            ("sim direct", direct),
            ("sim via gateway", via_gateway),
            ("upstream direct", upstream_direct),
            ("upstream via gateway", upstream_via_gateway),
        ):
            seq = _throughput(fn, calls, 1)
            par = _throughput(fn, calls, 8)
            print(f"  {name:<22} 1 thread {seq:9.1f}   8 threads {par:9.1f}")
        print(f"gateway stats: {client.stats().model_dump_json()}")
    finally:
        http.close()
        for proc in (gateway, stub):
            proc.terminate()
            proc.wait(timeout=10)
        ledger.cleanup()


if __name__ == "__main__":
    main()
