"""Benchmark: a real wave slice against a rate-limited provider, as ratios to the plugin's
targets, from one run.

    python bench/live_rate.py                          # 20 req/s, 0.25 s median, -n 2, 16 conn.
    python bench/live_rate.py --rate 12 --latency 1   # a provider that needs 12 calls in flight
    python bench/live_rate.py --rate 20 -- --sabot-framework=langgraph   # another slice
    python bench/live_rate.py --budget-usd 0.5         # the same load against a small cap
    python bench/live_rate.py --rerun                  # twice: the second session in order

Unlike ``bench/adaptive_rate.py`` (synthetic callers), the load here is a pytest session of
real pipeline cells (LangGraph and AutoGen, default configuration, T1 and T2, seeds 11 and
12: 56 cells) on the live path: ``--sabot-model=openai:gpt-5.6-terra`` through the real
OpenAI SDK and the session's gateways, pointed at a loopback provider. The provider is the
live tests' stand-in (tests/live/live_provider.py: the embedded model answers, reading its
role from the prompt as a real model must) behind a token bucket (``--rate`` requests per
second, ``--burst`` tokens; 429 with ``retry-after-ms`` when it is empty), answering after a
seeded lognormal latency around ``--latency``. Printed, beside their targets (never
asserted: one run on a shared machine is an order of magnitude, not a gate):

* the answered calls per second from the first answered call to the last, against the
  provider's rate (a bucket full at the start lets ``burst`` calls through above it),
                                                                  target >= 90 %;
* the same in the provider's busy window (from its first 429 to its last: the time the
  wave asked for more than it allows), where ramp and tail are left out;
* the spend the session's ledger recorded and what the provider billed, against the cap
                                                                  never above it;
* the 429s, the calls the session counted, and the load average.

With ``--rerun`` the slice runs twice in one project directory with pytest's cache (every
other run has none), each session against a fresh provider: the first starts the cells as
collected, the second starts the cells that ran longest in the first one first (SPEC
I163); both are printed.

The verdicts of such a session are fixtures of the embedded model, never measurements.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "live"))
sys.path.insert(0, str(ROOT / "bench"))

from adaptive_rate import TokenBucket  # noqa: E402
from live_provider import FakeProvider, _error  # type: ignore[import-not-found]  # noqa: E402
from live_shaped import session_arguments  # noqa: E402

from pytest_sabot.gateway.prices import load_prices  # noqa: E402
from pytest_sabot.gateway.protocol import Usage  # noqa: E402

TARGET_UTILISATION = 0.90
MODEL = "gpt-5.6-terra"
KEY = "sk-loopback-live-rate-not-a-real-key"
SLICE = [
    "--sabot-wave=1",
    "--sabot-framework=langgraph,autogen",
    "--sabot-config=default",
    "--sabot-task=T1,T2",
    "--sabot-seed=11,12",
]


class BucketedProvider(FakeProvider):  # type: ignore[misc]
    """The live tests' provider behind a token bucket, answering in a provider's time."""

    def __init__(self, rate: float, burst: int, latency: float, seed: int) -> None:
        super().__init__(KEY, models=(MODEL, "gpt-5.6-luna"))
        self.bucket = TokenBucket(rate, burst)
        self.latency = latency
        self.random = random.Random(seed)
        self.random_lock = threading.Lock()
        self.answered: list[float] = []
        self.limited: list[float] = []
        self.times_lock = threading.Lock()

    def _delay(self) -> float:
        with self.random_lock:  # lognormal around the median, as adaptive_rate.py draws
            return self.latency * math.exp(self.random.gauss(0.0, 0.35))

    def _decide(
        self, path: str, authorization: str, body: Any, model: str
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        wait = self.bucket.take()
        if wait:
            with self.times_lock:
                self.limited.append(time.monotonic())
            return 429, _error("Rate limit reached; try again later.", "requests",
                               "rate_limit_exceeded"), {
                "retry-after-ms": str(max(1, round(wait * 1000)))}
        time.sleep(self._delay())
        status, payload, headers = super()._decide(path, authorization, body, model)
        if status == 200:
            with self.times_lock:
                self.answered.append(time.monotonic())
        return status, payload, headers


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "SABOT_")) and not k.endswith("_API_KEY")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["OPENAI_API_KEY"] = KEY
    return env


def _per_second(times: list[float], start: float, end: float) -> float:
    inside = [t for t in times if start <= t <= end]
    return len(inside) / (end - start) if end > start else 0.0


def session(
    args: argparse.Namespace, extra: list[str], title: str, project: Path | None = None,
    name: str = "out",
) -> dict[str, Any]:
    """One session of the slice against a fresh provider, printed and returned; in
    ``project`` with pytest's cache (the order cells start in goes by what earlier sessions
    there recorded: SPEC I163), else in a new directory without it."""
    provider = BucketedProvider(args.rate, args.burst, args.latency, args.seed)
    with tempfile.TemporaryDirectory(prefix="sabot-live-rate-") as tmp:
        work = project if project is not None else Path(tmp)
        out = work / name
        cache = [] if project is not None else ["-p", "no:cacheprovider"]
        cmd = [
            sys.executable, "-m", "pytest", "-n", args.workers, "-q", *cache,
            "-p", "no:randomly", f"--sabot-out={out}", "--sabot-history=none",
            f"--sabot-model=openai:{MODEL}", f"--sabot-base-url={provider.url}",
            f"--sabot-max-connections={args.connections}",
            f"--sabot-concurrency={args.concurrency}", f"--sabot-budget-usd={args.budget_usd}",
            *extra,
        ]
        started = time.monotonic()
        proc = subprocess.run(cmd, cwd=work, env=_env(), capture_output=True, text=True,
                              check=False)
        wall = time.monotonic() - started
        results = json.loads((out / "results.json").read_text("utf-8")) \
            if (out / "results.json").is_file() else {}
    provider.close()
    table = load_prices(None)
    bill = sum(
        table.cost(entry["model"], Usage(
            prompt_tokens=int(entry["usage"].get("prompt_tokens", 0)),
            completion_tokens=int(entry["usage"].get("completion_tokens", 0)),
        )) or 0.0
        for entry in provider.log() if entry["status"] == 200
    )
    spend = results.get("spend", {})
    budget = spend.get("budget", {})
    answered = sorted(provider.answered)
    limited = sorted(provider.limited)
    first, last = (answered[0], answered[-1]) if answered else (0.0, 0.0)
    achieved = _per_second(answered, first, last)
    busy = _per_second(answered, limited[0], limited[-1]) if len(limited) > 1 else 0.0
    span = last - first
    ceiling = (args.rate * span + args.burst) / span if span else args.rate
    utilisation = achieved / args.rate
    load = os.getloadavg()
    report = {
        "rate": args.rate, "burst": args.burst, "latency_s": args.latency,
        "answered": len(answered), "provider_429s": len(limited),
        "answered_per_s": round(achieved, 2), "utilisation": round(utilisation, 3),
        "busy_window_per_s": round(busy, 2),
        "busy_window_s": round(limited[-1] - limited[0], 1) if len(limited) > 1 else 0.0,
        "provider_ceiling_per_s": round(ceiling, 2), "span_s": round(span, 1),
        "session_wall_s": round(wall, 1), "returncode": proc.returncode,
        "session_calls": spend.get("calls"), "upstream_retries": spend.get("upstream_retries"),
        "ledger_spent_usd": budget.get("spent_usd"), "provider_bill_usd": round(bill, 6),
        "budget_usd": args.budget_usd, "load_after": round(load[0], 1),
    }
    print(f"{title}: exit {proc.returncode}, wall {wall:.1f} s, {len(answered)} calls "
          f"answered in {span:.1f} s (first to last), {len(limited)} answered 429")
    print(f"  answered {achieved:.2f} calls/s of the provider's {args.rate:g}/s = "
          f"{utilisation:.0%}   target >= {TARGET_UTILISATION:.0%} "
          f"({'met' if utilisation >= TARGET_UTILISATION else 'NOT met'}; a full bucket at "
          f"the start allows {ceiling:.2f}/s over this span)")
    print(f"  in the provider's busy window ({report['busy_window_s']} s, first 429 to last): "
          f"{busy:.2f} calls/s = {busy / args.rate:.0%}")
    spent = budget.get("spent_usd")
    print(f"  spend: ledger ${spent if spent is not None else float('nan'):.6f}, provider "
          f"bill ${bill:.6f}, cap ${args.budget_usd:g} -> "
          f"{'under' if bill <= args.budget_usd else 'OVER'} the cap")
    print(f"  load average after: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    if proc.returncode:
        print(proc.stdout[-2000:], proc.stderr[-2000:])
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--rate", type=float, default=20.0, help="provider requests/s")
    parser.add_argument("--burst", type=int, default=5, help="provider bucket size")
    parser.add_argument("--latency", type=float, default=0.25, help="median latency, s")
    parser.add_argument("--budget-usd", type=float, default=100.0, help="the spend cap")
    parser.add_argument("--seed", type=int, default=11)
    session_arguments(parser)
    args = parser.parse_args(argv)
    extra = args.extra or SLICE
    load = os.getloadavg()
    print(f"load average before: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} on "
          f"{os.cpu_count()} cores; provider {args.rate:g} req/s (burst {args.burst}), "
          f"{args.latency:g} s median; slice: {' '.join(extra)}")
    if args.rerun:
        with tempfile.TemporaryDirectory(prefix="sabot-live-rate-project-") as project:
            reports = {
                "first": session(args, extra, "first session (nothing recorded yet: cells "
                                 "start as collected)", Path(project), "out-first"),
                "again": session(args, extra, "the session again (the longest recorded "
                                 "cells start first)", Path(project), "out"),
            }
    else:
        reports = {"session": session(args, extra, "session")}
    if args.json:
        print(json.dumps(reports))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
