"""Benchmark: a warm cell's cost when the framework's run-independent parts are built once
per process (this tree) against a tree that builds them on every run (``--before``).

    python bench/startup_reuse.py --before /path/to/older/checkout [--runs 9] [--rounds 3]

For each cell below, a fresh process per tree starts a loopback gateway on the embedded
model, runs the cell through the harness (``run_cell``) ``--runs`` times in a row and keeps
the first run (imports and first builds included) and the warm runs after it; the two trees
alternate, ``--rounds`` processes each, so a load on the shared machine falls on both.
Printed as one JSON object: per cell, both trees' median first run and median warm run, and
``warm_ratio`` = after / before (below 1 is faster). The AutoGen cells are a control: their
adapter builds nothing once per process, so their ratio shows the noise of the figure.
An order of magnitude from one machine, never a gate.

``parts`` times the construction itself, per run, in each tree (median of 200): CrewAI's
worker tools for task T1 (``_crewai_tool``: a new class per tool and run before, one class
and cached argument models after) and LangGraph's guardrail graph (``StateGraph`` built and
compiled per run before, looked up after; the "before" figure is this tree's ``_compile``,
the same construction the older tree ran inside every run). ``--parts-only`` prints only
these.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CELLS = [
    "langgraph-default-O1-T1-s11",
    "langgraph-guardrail-O1-T1-s11",
    "crewai-default-O1-T1-s11",
    "crewai-guardrail-O1-T1-s11",
    "autogen-default-O1-T1-s11",
    "autogen-guardrail-O1-T1-s11",
]

_TIMER = """
import json, sys, tempfile, time
from pathlib import Path
from pytest_sabot.gateway import start_gateway
from pytest_sabot.harness.run import RunSettings, run_cell
from pytest_sabot.matrix.standard import load_standard
root, cell_id, runs = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
std = load_standard(1, root)
cell = std.cell(cell_id)
times = []
with tempfile.TemporaryDirectory() as tmp, start_gateway() as gateway:
    for i in range(runs):
        settings = RunSettings(root=std.root, out_dir=Path(tmp) / str(i),
                               gateway_url=gateway.url, model="sim:realistic")
        started = time.perf_counter()
        outcome = run_cell(cell, std.wave, settings)
        times.append(time.perf_counter() - started)
        if outcome.error is not None:
            raise SystemExit(f"run error: {outcome.error}")
print(json.dumps(times))
"""


_PARTS = """
import json, statistics, sys, tempfile, time
from pathlib import Path
from pytest_sabot.adapters.crewai import _env
_env.load_crewai()
from pytest_sabot.adapters.crewai import pipeline as crewai_pipeline
from pytest_sabot.adapters.langgraph import pipeline as langgraph_pipeline
from pytest_sabot.matrix.standard import load_standard
from pytest_sabot.tasks import load_public
from pytest_sabot.tasks.world import PassThroughSeams, Workspace, make_tools

def median_ms(make, n=200):
    make()
    times = []
    for _ in range(n):
        started = time.perf_counter()
        make()
        times.append(time.perf_counter() - started)
    return round(statistics.median(times) * 1000, 3)

std = load_standard(1, Path(sys.argv[1]))
view = load_public("T1", std.root, std.wave.contract_revision)
with tempfile.TemporaryDirectory() as tmp:
    handles = make_tools(view, Workspace(Path(tmp)), PassThroughSeams())
    out = {"crewai_t1_tools_ms": median_ms(
        lambda: [crewai_pipeline._crewai_tool(h, lambda: None) for h in handles])}
if hasattr(langgraph_pipeline, "compiled_graph"):
    out["langgraph_graph_ms"] = median_ms(lambda: langgraph_pipeline.compiled_graph("guardrail"))
    out["langgraph_graph_built_per_run_ms"] = median_ms(
        lambda: langgraph_pipeline._compile(True), n=50)
print(json.dumps(out))
"""


def _parts(tree: Path) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "SABOT_"))}
    env["PYTHONPATH"] = str(tree)
    proc = subprocess.run(
        [sys.executable, "-c", _PARTS, str(tree)],
        # cwd: ``python -c`` puts the working directory first on sys.path, before
        # PYTHONPATH; run in the tree so each process imports that tree's package.
        cwd=tree, env=env, capture_output=True, text=True, check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"{tree} parts: {proc.stderr.strip()[-800:]}")
    parts: dict[str, float] = json.loads(proc.stdout.strip().splitlines()[-1])
    return parts


def _times(tree: Path, cell_id: str, runs: int) -> list[float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "SABOT_"))}
    env["PYTHONPATH"] = str(tree)
    proc = subprocess.run(
        [sys.executable, "-c", _TIMER, str(tree), cell_id, str(runs)],
        # cwd: ``python -c`` puts the working directory first on sys.path, before
        # PYTHONPATH; run in the tree so each process imports that tree's package.
        cwd=tree, env=env, capture_output=True, text=True, check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"{tree} {cell_id}: {proc.stderr.strip()[-800:]}")
    times: list[float] = json.loads(proc.stdout.strip().splitlines()[-1])
    return times


def _figures(rounds: list[list[float]]) -> dict[str, Any]:
    return {
        "first_ms": round(statistics.median(r[0] for r in rounds) * 1000, 1),
        "warm_median_ms": round(statistics.median(t for r in rounds for t in r[1:]) * 1000, 1),
        "warm_runs": sum(len(r) - 1 for r in rounds),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--before", type=Path, required=True, help="checkout to compare with")
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--parts-only", action="store_true")
    parser.add_argument("--cells", default=",".join(CELLS))
    args = parser.parse_args()
    before_parts, after_parts = _parts(args.before.resolve()), _parts(ROOT)
    report: dict[str, Any] = {
        "parts": {
            "crewai_t1_tools_ms": {
                "before": before_parts["crewai_t1_tools_ms"],
                "after": after_parts["crewai_t1_tools_ms"],
            },
            "langgraph_graph_ms": {
                "before": after_parts["langgraph_graph_built_per_run_ms"],
                "after": after_parts["langgraph_graph_ms"],
            },
        },
    }
    if args.parts_only:
        print(json.dumps(report, indent=1))
        return
    report.update({"runs_per_process": args.runs, "rounds": args.rounds, "cells": {}})
    for cell_id in args.cells.split(","):
        timed: dict[Path, list[list[float]]] = {args.before.resolve(): [], ROOT: []}
        for _ in range(args.rounds):
            for tree, rounds in timed.items():
                rounds.append(_times(tree, cell_id, args.runs))
        before = _figures(timed[args.before.resolve()])
        after = _figures(timed[ROOT])
        report["cells"][cell_id] = {
            "before": before,
            "after": after,
            "warm_ratio": round(after["warm_median_ms"] / before["warm_median_ms"], 2),
        }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
