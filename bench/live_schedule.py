"""Benchmark: what order and width could do for a live-shaped slice, replayed from its traces.

    python bench/live_shaped.py --keep /tmp/slice        # record a live-shaped slice once
    python bench/live_schedule.py /tmp/slice/out         # replay its calls under schedules

Each recorded cell is read back as a chain: the time before its first model call, each
call's model time (the latency the embedded model drew for it, recomputed as
``bench/live_shaped.py`` does), the time between calls (the framework's and the harness's
work, as measured in that run, its CPU contention included) and the time after the last.
The chains are then replayed, without running anything, on ``--connections`` connections
under several schedules: how many cells are in flight, which start first, who gets a free
connection (first come, or the cell with the most work left), and whether a fault cell
waits for its baseline to end, as a session does (a fault cell of a failed baseline is
not run, so it cannot start before its baseline's status is known: SPEC I161). For each
it prints the span against total model time / connections and the calls in flight on
average, beside the live-shaped targets (1.15x, 90 %).

This is a model of the slice, not a run: the times between calls are those of the run
that was recorded (at its width: more cells at once on the same cores would stretch them),
the replay gates every fault cell on its baseline (a session with ``-n 2`` gates only the
ones whose baseline runs in the same worker, so its figures fall between the gated and the
ungated rows), and the longest-first rows know every cell's length in advance, which only a
second session does (SPEC I163), and then only as the wall time of the first. It bounds
what a schedule can gain; the live-shaped bench measures what one does.
"""

from __future__ import annotations

import argparse
import heapq
import json
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pytest_sabot.core.models.cells import parse_cell_id  # noqa: E402
from pytest_sabot.gateway.backends.base import CallContext  # noqa: E402
from pytest_sabot.gateway.backends.sim import sim_latency  # noqa: E402

TARGET_SPAN_RATIO = 1.15
TARGET_IN_FLIGHT = 0.90


@dataclass
class Chain:
    """One cell: its id, its baseline's id (None for a baseline) and its segments in
    order, each ``(needs a connection, seconds)``."""

    cell_id: str
    baseline_id: str | None
    segments: list[tuple[bool, float]] = field(default_factory=list)

    @property
    def length(self) -> float:
        return sum(seconds for _, seconds in self.segments)


def read_chains(out: Path, median_s: float) -> list[Chain]:
    chains = []
    for trace in sorted(out.glob("cells/*/events.jsonl")):
        events = [json.loads(line) for line in trace.read_text("utf-8").splitlines() if line]
        start = events[0]["data"]
        cell_id, seed = str(start["cell_id"]), int(start["seed"])
        attempt = int(start.get("attempt", 1))
        parts = parse_cell_id(cell_id)
        if parts is None:
            raise SystemExit(f"{trace}: run_start names no cell id ({cell_id!r})")
        baseline = None if parts.operator is None else \
            f"{parts.framework}-{parts.config}-baseline-{parts.task}-s{parts.seed}"
        chain, t = Chain(cell_id, baseline), float(events[0]["t"])
        for event in events:
            if event["kind"] != "model_call" or event["data"].get("error"):
                continue
            drawn = sim_latency(median_s, CallContext(
                f"{cell_id}~a{attempt}", cell_id, seed, event["component"],
                int(event["data"]["call_index"]), "sim", "realistic"))
            chain.segments += [(False, max(0.0, event["t"] - drawn - t)), (True, drawn)]
            t = float(event["t"])
        chain.segments.append((False, max(0.0, float(events[-1]["t"]) - t)))
        chains.append(chain)
    return chains


@dataclass(frozen=True)
class Schedule:
    name: str
    width: int | None  # cells in flight at most (None: every cell)
    order: Callable[[Chain], float]  # the queue's order, smallest first
    most_work_first: bool  # a free connection goes to the cell with the most work left
    baselines_gate: bool  # a fault cell waits for its baseline to end


def replay(chains: list[Chain], schedule: Schedule, connections: int) -> float:
    """The span of ``chains`` under ``schedule`` (an event-driven replay)."""
    queue = sorted(range(len(chains)), key=lambda i: (schedule.order(chains[i]), i))
    index = {c.cell_id: i for i, c in enumerate(chains)}
    left = [c.length for c in chains]
    position = [0] * len(chains)
    ended: set[int] = set()
    waiting: list[int] = []
    timers: list[tuple[float, int, int, bool]] = []
    free, running, tick, now = connections, 0, 0, 0.0
    width = schedule.width or len(chains)

    def advance(i: int) -> None:
        nonlocal running, tick
        while position[i] < len(chains[i].segments):
            call, seconds = chains[i].segments[position[i]]
            if call:
                waiting.append(i)
                return
            position[i] += 1
            left[i] -= seconds
            if seconds > 0:
                tick += 1
                heapq.heappush(timers, (now + seconds, tick, i, False))
                return
        running -= 1
        ended.add(i)

    def fill() -> None:
        nonlocal running, free, tick
        j = 0
        while j < len(queue) and running < width:
            i = queue[j]
            base = chains[i].baseline_id
            if schedule.baselines_gate and base in index and index[base] not in ended:
                j += 1
                continue
            queue.pop(j)
            running += 1
            advance(i)
        if schedule.most_work_first:
            waiting.sort(key=lambda i: -left[i])
        while free and waiting:
            i = waiting.pop(0)
            seconds = chains[i].segments[position[i]][1]
            position[i] += 1
            left[i] -= seconds
            free -= 1
            tick += 1
            heapq.heappush(timers, (now + seconds, tick, i, True))

    fill()
    while timers:
        now, _, i, held = heapq.heappop(timers)
        free += held
        advance(i)
        fill()
    return now


def schedules(in_flight: int) -> list[Schedule]:
    def baseline_first(c: Chain) -> float:
        return 0.0 if c.baseline_id is None else 1.0

    def longest(c: Chain) -> float:
        return -c.length

    def longest_after_baselines(c: Chain) -> float:
        return baseline_first(c) * 1e6 - c.length

    def as_collected(c: Chain) -> float:
        return 0.0

    return [
        Schedule(f"{in_flight} in flight, the wave's order, baselines gate (a first session)",
                 in_flight, baseline_first, False, True),
        Schedule(f"{in_flight} in flight, longest first, baselines gate (a second session)",
                 in_flight, longest_after_baselines, False, True),
        Schedule("every cell in flight, baselines gate", None, baseline_first, False, True),
        Schedule(f"{in_flight} in flight, longest first, most work left first, baselines "
                 "gate", in_flight, longest_after_baselines, True, True),
        Schedule(f"{in_flight} in flight, the wave's order, no baseline gate", in_flight,
                 as_collected, False, False),
        Schedule(f"{in_flight} in flight, longest first, no baseline gate", in_flight,
                 longest, False, False),
        Schedule("every cell in flight, first come, no baseline gate", None, as_collected,
                 False, False),
        Schedule("every cell in flight, most work left first, no baseline gate (the floor)",
                 None, as_collected, True, False),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="a kept live-shaped output (--keep DIR: DIR/out)")
    parser.add_argument("--latency", type=float, default=1.0, help="the median it ran at (s)")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--in-flight", type=int, default=20,
                        help="cells in flight of the session (default: the automatic width "
                        "of -n 2 and 16 connections)")
    args = parser.parse_args(argv)
    chains = read_chains(args.out, args.latency)
    if not chains:
        print(f"{args.out}: no cells/*/events.jsonl to replay", file=sys.stderr)
        return 2
    model = sum(s for c in chains for call, s in c.segments if call)
    ideal = model / args.connections
    calls = sum(call for c in chains for call, _ in c.segments)
    baselines = [c.length for c in chains if c.baseline_id is None]
    print(f"{len(chains)} cells ({len(baselines)} baselines), {calls} calls, {model:.1f} s of "
          f"model time: ideal span {ideal:.1f} s on {args.connections} connections; longest "
          f"cell {max(c.length for c in chains):.1f} s, baselines {min(baselines):.1f}-"
          f"{max(baselines):.1f} s (median {statistics.median(baselines):.1f} s)")
    for schedule in schedules(args.in_flight):
        span = replay(chains, schedule, args.connections)
        share = model / span / args.connections
        print(f"  {schedule.name}: span {span:.1f} s = {span / ideal:.2f}x "
              f"(target <= {TARGET_SPAN_RATIO}x), in flight {share:.0%} "
              f"(target >= {TARGET_IN_FLIGHT:.0%})")
    print("(a replay of recorded chains, not a run: see the module's docstring)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
