"""The gateway's HTTP server (stdlib ``http.server``, threaded) against a maintained one
(uvicorn + starlette), serving the same GatewayService, from one run.

Both servers run in their own process with the same routes, the same session-secret and
browser checks and the same service behind them; only the HTTP layer differs. Two models:
  instant   a backend that returns a fixed completion (the server's own cost, nothing else)
  sim       the embedded model (what a keyless wave asks of the gateway)
For each, calls/s with 1 and 8 client threads (keep-alive httpx clients in this process)
and p50 latency per call. Printed as ratios uvicorn / http.server (> 1: uvicorn faster).

Usage: python bench/gateway_server.py [--calls 2000]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from pytest_sabot.gateway import BackendReply, CallContext, GatewayClient, GatewaySettings
from pytest_sabot.gateway.backends.base import usage_of

COMPLETION = {
    "id": "chatcmpl-bench",
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


class InstantBackend:
    def complete(self, request: dict[str, Any], call: CallContext) -> BackendReply:
        return BackendReply(
            response=dict(COMPLETION), usage=usage_of(COMPLETION), cost_usd=0.0, fixture=True
        )


def _request(i: int) -> dict[str, Any]:
    return {
        "model": "gpt-5.6-terra",
        "messages": [
            {"role": "system", "content": "You are the reviewer of a research summary."},
            {"role": "user", "content": f"Review draft number {i} and end with a verdict line."},
        ],
    }


# --------------------------------------------------------------------------- servers


def _serve_stdlib() -> None:
    import threading

    from pytest_sabot.gateway import start_gateway

    gateway = start_gateway(GatewaySettings(), backends={"instant": InstantBackend()})
    print(gateway.url, flush=True)
    threading.Event().wait()


def _serve_uvicorn() -> None:
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    from pytest_sabot.gateway.protocol import error_body
    from pytest_sabot.gateway.secrets import new_secret
    from pytest_sabot.gateway.server import SECRET_HEADER
    from pytest_sabot.gateway.service import GatewayService

    secret = new_secret()
    service = GatewayService(GatewaySettings(), {"instant": InstantBackend()}, secret=secret)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)  # connections queue up until uvicorn starts accepting
    host_header = f"127.0.0.1:{sock.getsockname()[1]}"

    def refused(request: Request, by_path: bool) -> Response | None:
        """The same checks as the stdlib handler's, in the same order."""
        headers = request.headers
        if "origin" in headers or "sec-fetch-site" in headers or "sec-fetch-mode" in headers:
            return JSONResponse(error_body("browser", "x", "sabot_browser_refused"), 403)
        if headers.get("host") != host_header:
            return JSONResponse(error_body("host", "x", "sabot_bad_host"), 403)
        media = headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if request.method == "POST" and media != "application/json":
            return JSONResponse(error_body("json", "x", "sabot_not_json"), 415)
        given = request.path_params.get("secret") if by_path else headers.get(SECRET_HEADER)
        if given != secret:
            return JSONResponse(error_body("secret", "x", "sabot_no_secret"), 401)
        return None

    def chat(request: Request, body: bytes) -> Response:
        served = service.chat(
            request.path_params["key"],
            request.path_params["agent"],
            body,
            request.headers.get("authorization"),
        )
        return Response(served.body, served.status, media_type=served.content_type)

    async def chat_route(request: Request) -> Response:
        refusal = refused(request, by_path=True)
        if refusal is not None:
            return refusal
        body = await request.body()
        # The service blocks (the embedded model, the upstream): run it off the event loop,
        # as the stdlib server runs it in a thread per connection.
        from starlette.concurrency import run_in_threadpool

        return await run_in_threadpool(chat, request, body)

    async def register_route(request: Request) -> Response:
        refusal = refused(request, by_path=False)
        if refusal is not None:
            return refusal
        return JSONResponse(service.register_run(json.loads(await request.body())))

    async def health_route(request: Request) -> Response:
        refusal = refused(request, by_path=False)
        return refusal or JSONResponse({"ok": True})

    app = Starlette(
        routes=[
            Route(
                "/{secret}/run/{key}/agent/{agent}/{rest:path}", chat_route, methods=["POST"]
            ),
            Route("/sabot/runs", register_route, methods=["POST"]),
            Route("/sabot/health", health_route, methods=["GET"]),
        ]
    )
    print(f"http://{host_header}/{secret}", flush=True)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    uvicorn.Server(config).run(sockets=[sock])


# --------------------------------------------------------------------------- client


def _spawn(kind: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, __file__, "--serve", kind],
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def _measure(url: str, model: str, calls: int) -> dict[str, float]:
    client = GatewayClient(url)
    label = f"bench-{model.replace(':', '-')}~a1"
    client.register_run(label, "bench", 11, model)
    endpoint = client.base_url(label, "reviewer") + "/chat/completions"
    local = __import__("threading").local()

    def call(i: int) -> float:
        http = getattr(local, "http", None)
        if http is None:
            http = local.http = httpx.Client(trust_env=False, timeout=60)
        start = time.perf_counter()
        http.post(endpoint, json=_request(i)).raise_for_status()
        return (time.perf_counter() - start) * 1000.0

    for i in range(50):
        call(i)  # warm up
    out: dict[str, float] = {}
    for threads in (1, 8):
        start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=threads) as pool:
            latencies = list(pool.map(call, range(calls)))
        out[f"calls/s {threads} thread{'s' if threads > 1 else ''}"] = calls / (
            time.perf_counter() - start
        )
        out[f"p50 ms {threads} thread{'s' if threads > 1 else ''}"] = statistics.median(latencies)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--serve", choices=["stdlib", "uvicorn"], help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.serve == "stdlib":
        _serve_stdlib()
        return
    if options.serve == "uvicorn":
        _serve_uvicorn()
        return
    results: dict[str, dict[str, dict[str, float]]] = {}
    for kind in ("stdlib", "uvicorn"):
        proc, url = _spawn(kind)
        try:
            results[kind] = {
                "instant": _measure(url, "instant:x", options.calls),
                "sim": _measure(url, "sim:realistic", max(200, options.calls // 5)),
            }
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    print(f"gateway HTTP server: http.server vs uvicorn+starlette ({os.cpu_count()} cores)")
    header = f"{'model':<9}{'measure':<20}{'http.server':>13}{'uvicorn':>11}{'ratio':>8}"
    print(header)
    for model in ("instant", "sim"):
        for measure, stdlib in results["stdlib"][model].items():
            other = results["uvicorn"][model][measure]
            ratio = other / stdlib if measure.startswith("calls") else stdlib / other
            print(f"{model:<9}{measure:<20}{stdlib:>13.2f}{other:>11.2f}{ratio:>8.2f}")
    print("ratio > 1: uvicorn+starlette is faster (more calls/s, or lower latency)")


if __name__ == "__main__":
    main()
