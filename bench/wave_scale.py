"""Benchmark: how a keyless wave scales, as ratios to the plugin's targets, from one run each.

    python bench/wave_scale.py                       # wave 1: -n 2, -n 1, per-cell cost
    python bench/wave_scale.py --skip-one-worker     # only the -n 2 wall time and per-cell cost
    python bench/wave_scale.py -- --sabot-framework=langgraph   # a slice (extra pytest args)

Three figures, each printed beside its target (never asserted: a single run on a shared
machine is an order of magnitude, not a gate):

* wall time of the wave with ``-n 2``                        target <= 60 s (wave 1, 2 cores);
* parallel efficiency from 1 to 2 workers, wall(-n 1) / (2 * wall(-n 2)), target >= 90 %;
* per-cell cost of the harness against the bare framework run: the ``ratio`` of
  bench/harness_overhead_<framework>.py (a warm harness run / the same pipeline recording
  nothing, on the same embedded model), weighted by the wave's runnable cells per
  framework,                                                 target <= 1.25x.

Every session runs in a fresh temporary directory with its own output; the figures are
printed as text and, with ``--json``, as one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TARGET_WALL_S = 60.0
TARGET_EFFICIENCY = 0.90
TARGET_CELL_RATIO = 1.25
OVERHEAD_BENCHES = {
    "langgraph": "harness_overhead_langgraph.py",
    "crewai": "harness_overhead_crewai.py",
    "autogen": "harness_overhead_autogen.py",
}


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "SABOT_"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def run_wave(wave: str, workers: str, extra: list[str]) -> dict[str, Any]:
    """One whole session; its wall time, exit code and recorded cells."""
    with tempfile.TemporaryDirectory(prefix="sabot-scale-") as work:
        out = Path(work) / "out"
        cmd = [
            sys.executable, "-m", "pytest", f"--sabot-wave={wave}", "-n", workers, "-q",
            "-p", "no:cacheprovider", "-p", "no:randomly", f"--sabot-out={out}", *extra,
        ]
        started = time.monotonic()
        proc = subprocess.run(
            cmd, cwd=work, env=_env(), capture_output=True, text=True, check=False
        )
        wall = time.monotonic() - started
        cells = 0
        if (out / "results.json").is_file():
            cells = len(json.loads((out / "results.json").read_text("utf-8"))["cells"])
    last = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else "(no output)"
    return {"workers": workers, "wall_s": round(wall, 1), "exit": proc.returncode,
            "cells": cells, "last_line": last}


def overhead(framework: str) -> float | None:
    """The harness/bare ratio one overhead bench prints (autogen: the mean of its two
    configurations)."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / OVERHEAD_BENCHES[framework])],
        cwd=ROOT, env=_env(), capture_output=True, text=True, check=False,
    )
    if proc.returncode != 0:
        return None
    text = proc.stdout
    data = json.loads(text[text.index("{"):])
    if "ratio" in data:
        return float(data["ratio"])
    ratios = [float(v["ratio"]) for v in data.values() if isinstance(v, dict) and "ratio" in v]
    return sum(ratios) / len(ratios) if ratios else None


def cell_mix(wave: str) -> dict[str, int]:
    """Runnable cells of the wave per framework (the weights of the per-cell ratio)."""
    sys.path.insert(0, str(ROOT))
    from pytest_sabot.matrix.standard import load_standard

    mix: dict[str, int] = {}
    for cell in load_standard(wave).cells:
        if not cell.carved_out:
            mix[cell.framework] = mix.get(cell.framework, 0) + 1
    return mix


def _line(name: str, value: str, target: str, ratio: float, met: bool) -> str:
    verdict = "met" if met else "NOT met"
    return f"{name:<38}{value:>12}   target {target:<9} ratio {ratio:5.2f}  {verdict}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wave", default="1")
    parser.add_argument("--skip-one-worker", action="store_true",
                        help="do not run the wave with -n 1 (no parallel efficiency)")
    parser.add_argument("--skip-overhead", action="store_true",
                        help="do not run the per-framework overhead benches")
    parser.add_argument("--json", action="store_true", help="also print one JSON object")
    parser.add_argument("extra", nargs="*", help="extra pytest arguments (after --)")
    args = parser.parse_args()

    report: dict[str, Any] = {"wave": args.wave, "extra": args.extra, "cpus": os.cpu_count()}
    two = run_wave(args.wave, "2", args.extra)
    report["n2"] = two
    lines = [_line(f"wave {args.wave} -n 2 wall", f"{two['wall_s']:.1f} s",
                   f"<= {TARGET_WALL_S:.0f} s", two["wall_s"] / TARGET_WALL_S,
                   two["wall_s"] <= TARGET_WALL_S)]
    if not args.skip_one_worker:
        one = run_wave(args.wave, "1", args.extra)
        report["n1"] = one
        efficiency = one["wall_s"] / (2 * two["wall_s"]) if two["wall_s"] else 0.0
        report["efficiency"] = round(efficiency, 3)
        lines.append(_line("parallel efficiency 1 -> 2 workers", f"{efficiency:.0%}",
                           f">= {TARGET_EFFICIENCY:.0%}", efficiency / TARGET_EFFICIENCY,
                           efficiency >= TARGET_EFFICIENCY))
    if not args.skip_overhead:
        mix = cell_mix(args.wave)
        ratios = {fw: overhead(fw) for fw in OVERHEAD_BENCHES if fw in mix}
        report["overhead"] = ratios
        known = {fw: r for fw, r in ratios.items() if r is not None}
        if known:
            weight = sum(mix[fw] for fw in known)
            per_cell = sum(mix[fw] * r for fw, r in known.items()) / weight
            report["per_cell_ratio"] = round(per_cell, 3)
            each = ", ".join(f"{fw} {r:.2f}" for fw, r in known.items())
            lines.append(_line("per-cell cost vs bare framework", f"{per_cell:.2f}x",
                               f"<= {TARGET_CELL_RATIO:.2f}x", per_cell / TARGET_CELL_RATIO,
                               per_cell <= TARGET_CELL_RATIO) + f"  ({each})")
    for run in (report.get("n2"), report.get("n1")):
        if run:
            print(f"-n {run['workers']}: exit {run['exit']}, {run['cells']} cells, "
                  f"{run['wall_s']:.1f} s: {run['last_line']}")
    print("\n".join(lines))
    print("(ratio: measured / target, met at <= 1 for time and cost, >= 1 for efficiency; "
          "one run each on this machine, never a gate)")
    if args.json:
        print(json.dumps(report))
    return 0 if two["exit"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
