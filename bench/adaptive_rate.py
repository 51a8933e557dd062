"""Benchmark: how close the gateway's adaptive concurrency gets to a provider's rate limit,
and that the spend cap holds while it does (one run; a figure, never a gate).

A loopback provider enforces a token bucket (``--rate`` requests per second, ``--burst``
tokens) and answers with a realistic, seeded latency (lognormal around ``--latency``
seconds); a request that finds the bucket empty gets 429 with ``retry-after-ms`` until the
next token, as hosted providers answer. One gateway, with ``--max-connections`` as its
ceiling, serves ``--clients`` callers that call without pause for ``--seconds``. Printed:

* the answered calls per second against the provider's rate (target >= 90 %),
* the 429s the provider sent and the gateway's concurrency limit at the end,
* the spend the ledger recorded against the cap, and what the provider billed (never above
  the cap).

    python bench/adaptive_rate.py                       # 20 req/s, 0.25 s, 20 s of load
    python bench/adaptive_rate.py --rate 40 --latency 0.5 --budget-usd 0.05
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TARGET_UTILISATION = 0.90
KEY = "sk-loopback-bench-not-a-real-key"
PRICES = """\
version: 1
models:
  bucketed:
    input: 1.0
    cached_input: 0.1
    output: 4.0
    max_output_tokens: 64
"""


class TokenBucket:
    def __init__(self, rate: float, burst: int) -> None:
        self.rate, self.burst = rate, burst
        self.tokens = float(burst)
        self.stamp = time.monotonic()
        self.lock = threading.Lock()

    def take(self) -> float:
        """0 when a token was taken, else the seconds until the next one."""
        with self.lock:
            now = time.monotonic()
            self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
            self.stamp = now
            if self.tokens >= 1:
                self.tokens -= 1
                return 0.0
            return (1 - self.tokens) / self.rate


class BucketProvider:
    """An OpenAI-compatible chat endpoint behind a token bucket, on 127.0.0.1."""

    def __init__(self, rate: float, burst: int, latency: float, seed: int) -> None:
        self.bucket = TokenBucket(rate, burst)
        self.latency = latency
        self.random = random.Random(seed)
        self.random_lock = threading.Lock()
        self.answered: list[float] = []
        self.limited = 0
        self.billed: list[tuple[int, int]] = []
        self.lock = threading.Lock()
        provider = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return None

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                provider.serve(self, body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def _delay(self) -> float:
        with self.random_lock:  # lognormal, median `latency`, a long-ish tail
            return self.latency * math.exp(self.random.gauss(0.0, 0.35))

    def serve(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        wait = self.bucket.take()
        if wait:
            with self.lock:
                self.limited += 1
            self._send(handler, 429, {"error": {"message": "rate limited", "type": "requests",
                                                "code": "rate_limit_exceeded"}},
                       {"retry-after-ms": str(max(1, round(wait * 1000)))})
            return
        time.sleep(self._delay())
        prompt = sum(len(str(m.get("content", ""))) for m in body.get("messages", [])) // 4 + 8
        completion = min(24, int(body.get("max_completion_tokens") or body.get("max_tokens")
                                 or 24))
        with self.lock:
            self.answered.append(time.monotonic())
            self.billed.append((prompt, completion))
        self._send(handler, 200, {
            "id": "chatcmpl-bench", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "bucketed"),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "ok"}}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                      "total_tokens": prompt + completion},
        }, {})

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, payload: dict[str, Any],
              headers: dict[str, str]) -> None:
        data = json.dumps(payload).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(data)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=20.0, help="provider requests/s")
    parser.add_argument("--burst", type=int, default=5, help="provider bucket size")
    parser.add_argument("--latency", type=float, default=0.25, help="median latency, s")
    parser.add_argument("--seconds", type=float, default=20.0, help="length of the load")
    parser.add_argument("--clients", type=int, default=24, help="concurrent callers")
    parser.add_argument("--max-connections", type=int, default=16, help="gateway ceiling")
    parser.add_argument("--budget-usd", type=float, default=1.0, help="the spend cap")
    parser.add_argument("--recover-after", type=int, default=None,
                        help="successes before the limit grows by one (default: the "
                        "gateway's)")
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()

    import httpx

    from pytest_sabot.gateway import GatewayClient, GatewaySettings, start_gateway
    from pytest_sabot.gateway.ledger import read_ledger
    from pytest_sabot.gateway.prices import load_prices
    from pytest_sabot.gateway.protocol import Usage

    os.environ["OPENAI_API_KEY"] = KEY
    provider = BucketProvider(args.rate, args.burst, args.latency, args.seed)
    with tempfile.TemporaryDirectory(prefix="sabot-rate-") as tmp:
        prices = Path(tmp) / "prices.yaml"
        prices.write_text(PRICES)
        settings = GatewaySettings(
            allow_live=True, base_url=provider.url, prices_path=prices,
            budget_usd=args.budget_usd, max_connections=args.max_connections,
            spend_ledger_dir=Path(tmp),
            **({"recover_after": args.recover_after} if args.recover_after else {}),
        )
        stop_at = time.monotonic() + args.seconds
        statuses: list[int] = []
        lock = threading.Lock()
        with start_gateway(settings) as gateway:
            client = GatewayClient(gateway.url)

            for index in range(args.clients):  # registered before the load starts
                client.register_run(f"bench-{index}~a1", f"bench-{index}", 11,
                                    "openai:bucketed")

            def caller(index: int) -> None:
                label = f"bench-{index}~a1"
                endpoint = client.base_url(label, "worker") + "/chat/completions"
                with httpx.Client(trust_env=False, timeout=120) as http:
                    i = 0
                    while time.monotonic() < stop_at:
                        body = {"model": "bucketed", "max_completion_tokens": 24,
                                "messages": [{"role": "user", "content": f"q{index}-{i}"}]}
                        status = http.post(endpoint, json=body).status_code
                        with lock:
                            statuses.append(status)
                        if status == 402:
                            break
                        i += 1
                client.close_run(label)

            started = time.monotonic()
            with ThreadPoolExecutor(args.clients) as pool:
                list(pool.map(caller, range(args.clients)))
            ended = time.monotonic()
            limit = gateway.service.limit.limit
        ledger = read_ledger(Path(tmp))
        table = load_prices(prices)
        bill = sum(table.cost("bucketed", Usage(prompt_tokens=p, completion_tokens=c)) or 0.0
                   for p, c in provider.billed)
    provider.close()
    # answered within the load window (the calls in flight at its end finish after it)
    window = [t for t in provider.answered if started <= t <= stop_at]
    achieved = len(window) / (stop_at - started)
    utilisation = achieved / args.rate
    # a bucket full at the start lets `burst` calls through above the rate
    ceiling = (args.rate * (stop_at - started) + args.burst) / (stop_at - started)
    report = {
        "rate": args.rate, "burst": args.burst, "latency_s": args.latency,
        "seconds": round(ended - started, 1), "clients": args.clients,
        "max_connections": args.max_connections, "answered_per_s": round(achieved, 2),
        "utilisation": round(utilisation, 3), "provider_ceiling_per_s": round(ceiling, 2),
        "provider_429s": provider.limited, "final_limit": limit,
        "gateway_statuses": {str(s): statuses.count(s) for s in sorted(set(statuses))},
        "ledger_spent_usd": round(ledger.spent_usd, 6), "provider_bill_usd": round(bill, 6),
        "budget_usd": args.budget_usd, "recover_after": settings.recover_after,
    }
    print(f"answered {achieved:.2f} calls/s of the provider's {args.rate:g}/s "
          f"-> {utilisation:.0%}; target >= {TARGET_UTILISATION:.0%} -> ratio "
          f"{utilisation / TARGET_UTILISATION:.2f} "
          f"({'met' if utilisation >= TARGET_UTILISATION else 'NOT met'})")
    print(f"provider 429s: {provider.limited}; gateway limit at the end: {limit} "
          f"(ceiling {args.max_connections}); statuses seen by callers: "
          f"{report['gateway_statuses']}")
    print(f"spend: ledger ${ledger.spent_usd:.6f}, provider bill ${bill:.6f}, cap "
          f"${args.budget_usd:g} -> {'under' if bill <= args.budget_usd else 'OVER'} the cap")
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
