"""Benchmark: a live-shaped keyless slice, as ratios to the plugin's targets, from one run.

    python bench/live_shaped.py                        # 1 s median latency, -n 2, 16 connections
    python bench/live_shaped.py --vs-sequential        # and the same slice one cell at a time
    python bench/live_shaped.py --latency 800ms -- --sabot-framework=autogen   # another slice
    python bench/live_shaped.py --slice large          # 168 cells: seeds 11-13, both configurations
    python bench/live_shaped.py --rerun                # twice: the second session in order

The embedded model answers in a provider's time (``--sabot-sim-latency``: a seeded lognormal
per call, each call holding one of ``--sabot-max-connections``), so the slice has a live
wave's shape with no key and no spend. Figures, printed beside their targets (never
asserted: one run on a shared machine is an order of magnitude, not a gate):

* calls in flight on average over the cells' span (first run_start to last run_end),
  as a share of the connections allowed,                          target >= 90 %;
* the span against the shortest a provider with that many connections allows, total model
  time / connections,                                             target <= 1.15x.

The model time of every call is the latency the embedded model drew for it, recomputed
from the trace (the draw is deterministic per call: pytest_sabot.gateway.backends.sim.
sim_latency), so waiting for a free connection is not counted as model time. With
``--vs-sequential`` the same slice runs again with ``--sabot-concurrency=1`` right after
(the calls in flight are then at most the workers): the gain is the ratio of the two spans.
The load of the machine is printed with the figures, and so are the ramp (from the first
cell's start to the first moment the calls in flight reach 90 % of the connections) and the
tail (from the last such moment to the last cell's end): in a short slice they weigh on
the span, in a whole wave they do not. ``--slice large`` runs three times as many cells
(the same frameworks, T1-T2, seeds 11-13, both configurations) to show that weight; the
figures are the span's as a whole, ramp and tail included. ``--rerun`` runs the slice twice
in one project directory with pytest's cache (every other run has none): the first session
starts the cells as collected, the second starts the cells that ran longest in the first
one first (SPEC I163); the figures of both are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pytest_sabot.gateway.backends.base import CallContext  # noqa: E402
from pytest_sabot.gateway.backends.sim import sim_latency  # noqa: E402
from pytest_sabot.session.options import duration  # noqa: E402

TARGET_IN_FLIGHT = 0.90
TARGET_SPAN_RATIO = 1.15
DEFAULT_SLICE = [
    "--sabot-wave=1",
    "--sabot-framework=langgraph,autogen",
    "--sabot-config=default",
    "--sabot-task=T1,T2",
    "--sabot-seed=11,12",
]
LARGE_SLICE = [
    "--sabot-wave=1",
    "--sabot-framework=langgraph,autogen",
    "--sabot-task=T1,T2",
    "--sabot-seed=11,12,13",
]
SLICES = {"default": DEFAULT_SLICE, "large": LARGE_SLICE}


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "SABOT_"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def _events(trace: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in trace.read_text("utf-8").splitlines() if line]


def in_flight_timeline(
    intervals: list[tuple[float, float]], start: float, end: float, step: float = 0.5
) -> list[float]:
    """Calls in flight on average in each ``step`` from ``start`` to ``end``."""
    counts = []
    t = start
    while t < end:
        u = t + step
        counts.append(sum(max(0.0, min(u, b) - max(t, a)) for a, b in intervals) / step)
        t = u
    return counts


def ramp_and_tail(timeline: list[float], connections: int, step: float = 0.5) -> tuple[float,
                                                                                        float]:
    """Seconds before the calls in flight first reach 90 % of the connections, and after
    they last do (the whole span, twice, when they never do)."""
    full = [i for i, n in enumerate(timeline) if n >= TARGET_IN_FLIGHT * connections]
    if not full:
        return len(timeline) * step, len(timeline) * step
    return full[0] * step, (len(timeline) - 1 - full[-1]) * step


def measure(out: Path, median_s: float) -> dict[str, Any]:
    """Span, model time and calls of the cells recorded under ``out``, and each call's
    model time as an interval ending when the trace recorded it."""
    first, last, model_s, calls, cells = float("inf"), 0.0, 0.0, 0, 0
    intervals: list[tuple[float, float]] = []
    for trace in sorted(out.glob("cells/*/events.jsonl")):
        events = _events(trace)
        start = events[0]
        attempt = int(start["data"].get("attempt", 1))
        cell_id = str(start["data"]["cell_id"])
        seed = int(start["data"]["seed"])
        first, last, cells = min(first, start["t"]), max(last, events[-1]["t"]), cells + 1
        for event in events:
            if event["kind"] != "model_call" or event["data"].get("error"):
                continue
            call = CallContext(
                f"{cell_id}~a{attempt}", cell_id, seed, event["component"],
                int(event["data"]["call_index"]), "sim", "realistic",
            )
            drawn = sim_latency(median_s, call)
            model_s += drawn
            intervals.append((event["t"] - drawn, event["t"]))
            calls += 1
    started = min(
        (datetime.fromisoformat(json.loads(f.read_text("utf-8"))["started"]).timestamp()
         for f in out.glob("sessions/*.json")),
        default=first,
    )
    return {"cells": cells, "calls": calls, "model_s": model_s, "span_s": last - first,
            "lead_in_s": max(0.0, first - started), "first": first, "last": last,
            "intervals": intervals}


def run_slice(
    workers: str, latency: str, connections: int, concurrency: str, extra: list[str],
    keep: Path | None = None, project: Path | None = None, name: str = "out",
) -> dict[str, Any]:
    """One session of the slice; in ``project`` with pytest's cache (the order cells start
    in goes by what earlier sessions there recorded: SPEC I163), else in a new directory
    without it."""
    with tempfile.TemporaryDirectory(prefix="sabot-live-shaped-") as tmp:
        work = project if project is not None else Path(tmp)
        out = (keep if keep is not None else work) / name
        cache = [] if project is not None else ["-p", "no:cacheprovider"]
        cmd = [
            sys.executable, "-m", "pytest", "-n", workers, "-q", *cache,
            "-p", "no:randomly", f"--sabot-out={out}", "--sabot-history=none",
            f"--sabot-sim-latency={latency}", f"--sabot-max-connections={connections}",
            f"--sabot-concurrency={concurrency}", *extra,
        ]
        started = time.monotonic()
        proc = subprocess.run(cmd, cwd=work, env=_env(), capture_output=True, text=True,
                              check=False)
        wall = time.monotonic() - started
        figures = measure(out, duration(latency))
    if not figures["cells"]:
        raise SystemExit(
            f"bench/live_shaped.py: the session recorded no cell (pytest exited "
            f"{proc.returncode}), so there is nothing to measure; its command was\n  "
            f"{' '.join(cmd)}\n{(proc.stdout + proc.stderr)[-1500:]}"
        )
    load = os.getloadavg()[0]
    return {"returncode": proc.returncode, "wall_s": wall, "load_after": load, **figures,
            "output": proc.stdout[-1500:] if proc.returncode else ""}


def report(name: str, got: dict[str, Any], connections: int) -> dict[str, Any]:
    ideal = got["model_s"] / connections
    in_flight = got["model_s"] / got["span_s"] if got["span_s"] else 0.0
    intervals = got.pop("intervals")
    timeline = in_flight_timeline(intervals, got.pop("first"), got.pop("last"))
    ramp, tail = ramp_and_tail(timeline, connections)
    figures = {
        "in_flight_avg": in_flight,
        "in_flight_share": in_flight / connections,
        "span_ratio": got["span_s"] / ideal if ideal else float("inf"),
        "ramp_s": ramp,
        "tail_s": tail,
    }
    print(f"{name}: {got['cells']} cells, {got['calls']} model calls, "
          f"{got['model_s']:.1f} s of model time; span {got['span_s']:.1f} s "
          f"(session wall {got['wall_s']:.1f} s, exit {got['returncode']})")
    print(f"  calls in flight on average: {in_flight:.1f} of {connections} = "
          f"{figures['in_flight_share']:.0%}   target >= {TARGET_IN_FLIGHT:.0%}")
    print(f"  span / (model time / connections): {figures['span_ratio']:.2f}x   "
          f"target <= {TARGET_SPAN_RATIO:.2f}x")
    print(f"  ramp {ramp:.1f} s to {TARGET_IN_FLIGHT:.0%} of the connections, tail {tail:.1f} s "
          f"after it (of a {got['span_s']:.1f} s span); load average at the end "
          f"{got['load_after']:.1f}")
    lead = got["lead_in_s"]
    print(f"  lead-in {lead:.0f} s from the session's start to the first cell (workers "
          f"starting, collecting, importing the frameworks); with it "
          f"(lead-in + span) / (model time / connections) = "
          f"{(lead + got['span_s']) / ideal if ideal else float('inf'):.2f}x")
    if got["output"]:
        print(got["output"])
    return {**got, **figures}


def session_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of a bench that runs a slice as plugin sessions (this one and
    bench/live_rate.py): the workers, the connections, the cells in flight, the second
    session, JSON, and the slice itself after ``--``."""
    parser.add_argument("--workers", default="2")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--concurrency", default="auto")
    parser.add_argument("--rerun", action="store_true",
                        help="run the slice twice in one project: the second session "
                        "starts the cells that ran longest in the first first (SPEC I163)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("extra", nargs="*", help="pytest arguments (after --): the slice")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1] if __doc__ else "")
    parser.add_argument("--latency", default="1s")
    parser.add_argument("--vs-sequential", action="store_true")
    parser.add_argument("--slice", choices=sorted(SLICES), default="default")
    parser.add_argument("--keep", type=Path, default=None,
                        help="keep the output of the in-flight session here")
    session_arguments(parser)
    args = parser.parse_args(argv)
    extra = args.extra or SLICES[args.slice]
    load = os.getloadavg()
    print(f"load average before: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} "
          f"on {os.cpu_count()} cores; slice: {' '.join(extra)}")
    name = f"-n {args.workers}, --sabot-concurrency {args.concurrency}"
    if args.rerun:
        with tempfile.TemporaryDirectory(prefix="sabot-live-shaped-project-") as project:
            results = {"first": report(
                f"{name}, first session (nothing recorded yet: cells start as collected)",
                run_slice(args.workers, args.latency, args.connections, args.concurrency,
                          extra, args.keep, Path(project), "out-first"),
                args.connections,
            )}
            results["in_flight"] = report(
                f"{name}, the session again (the longest recorded cells start first)",
                run_slice(args.workers, args.latency, args.connections, args.concurrency,
                          extra, args.keep, Path(project), "out"),
                args.connections,
            )
    else:
        results = {"in_flight": report(
            name,
            run_slice(args.workers, args.latency, args.connections, args.concurrency, extra,
                      args.keep),
            args.connections,
        )}
    if args.vs_sequential:
        results["sequential"] = report(
            f"-n {args.workers}, --sabot-concurrency 1",
            run_slice(args.workers, args.latency, args.connections, "1", extra),
            args.connections,
        )
        gain = results["sequential"]["span_s"] / results["in_flight"]["span_s"]
        print(f"gain of the cells in flight: {gain:.1f}x shorter span")
    load = os.getloadavg()
    print(f"load average after: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    if args.json:
        print(json.dumps(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
