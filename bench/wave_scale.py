"""Benchmark: how a keyless wave scales, every figure beside its target, from one run.

    python bench/wave_scale.py                       # wave 1 and its T1 slice, -n 0 and -n 2
    python bench/wave_scale.py --skip-serial         # only the -n 2 sessions (no gains)
    python bench/wave_scale.py --overhead            # also the per-cell cost vs bare frameworks
    python bench/wave_scale.py -- --sabot-framework=langgraph   # extra pytest args, every session
    python bench/wave_scale.py --rescore-only OUT    # only sabot rescore of a recorded wave

Four sessions, each in a fresh temporary directory with its own output and its own cache
of the parsed standard (so every session pays its own parse once, as a first session
does): the T1 slice (``--sabot-task=T1``) with ``-n 2`` then ``-n 0``, the whole wave
with ``-n 2`` then ``-n 0`` (back to back, so a load on the shared machine falls on both
of a pair). Then ``sabot rescore`` of the whole ``-n 2`` wave. Printed, each beside its
target (never asserted: a single run on a shared machine is an order of magnitude, not a
gate):

* wall time of the whole wave with ``-n 2``                        target <= 60 s (2 cores);
* gain from ``-n 0`` to ``-n 2``, wall(-n 0) / wall(-n 2), on the T1 slice   target >= 1.8x;
* the same gain on the whole wave                                   target >= 1.85x;
* peak RSS of a worker (the largest VmHWM of the ``-n 2`` sessions' workers) <= 400 MB;
* wall time of ``sabot rescore`` of the whole wave (the median of ``--rescore-runs``, 3 by
  default, each with a new cache of the parsed standard)           target <= 1 s;
* with ``--overhead``: the per-cell cost of the harness against the bare framework run (the
  ratio of bench/harness_overhead_<framework>.py, weighted by the wave's runnable cells per
  framework)                                                        target <= 1.25x.

Each session's CPU time (its processes' user + system) and the load average (1 minute)
before and after it are printed beside it: the machine is shared, so a figure taken under
load says so. ``--json`` also prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TARGET_WALL_S = 60.0
TARGET_GAIN_SLICE = 1.8
TARGET_GAIN_WAVE = 1.85
TARGET_RSS_MB = 400.0
TARGET_RESCORE_S = 1.0
TARGET_CELL_RATIO = 1.25
OVERHEAD_BENCHES = {
    "langgraph": "harness_overhead_langgraph.py",
    "crewai": "harness_overhead_crewai.py",
    "autogen": "harness_overhead_autogen.py",
}
_WORKER_MARK = "exec(eval(sys.stdin.readline()))"  # an xdist (execnet) worker's command


def _env(cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "SABOT_"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["SABOT_CACHE_DIR"] = str(cache)
    return env


def _children() -> dict[int, list[int]]:
    """Every process's children, from /proc (empty where there is no /proc)."""
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(entry))
    return tree


def _peak_kb(pid: int) -> tuple[int, str] | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]), cmdline
    return None


class PeakRss:
    """Polls a process tree twice a second for the peak RSS (VmHWM) of each process."""

    def __init__(self, root_pid: int) -> None:
        self.root_pid = root_pid
        self.peaks: dict[int, tuple[int, str]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        while not self._stop.wait(0.5):
            tree, todo = _children(), [self.root_pid]
            while todo:
                pid = todo.pop()
                todo += tree.get(pid, [])
                found = _peak_kb(pid)
                if found is not None and found[0] >= self.peaks.get(pid, (0, ""))[0]:
                    self.peaks[pid] = found

    def stop(self) -> dict[str, float]:
        self._stop.set()
        self._thread.join()
        workers = [kb for kb, cmd in self.peaks.values() if _WORKER_MARK in cmd]
        main = self.peaks.get(self.root_pid, (0, ""))[0]
        return {"worker_mb": round(max(workers, default=0) / 1024, 1),
                "worker_processes": len(workers), "main_mb": round(main / 1024, 1)}


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_session(work: Path, name: str, workers: str, args: list[str]) -> dict[str, Any]:
    """One whole session: wall and CPU time, exit code, cells, peak RSS, load average."""
    out = work / name
    cmd = [
        sys.executable, "-m", "pytest", "-n", workers, "-q", "-p", "no:cacheprovider",
        "-p", "no:randomly", f"--sabot-out={out}", *args,
    ]
    load_before = os.getloadavg()[0]
    cpu_before = _cpu_s()
    started = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=work, env=_env(work / f"cache-{name}"),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    rss = PeakRss(proc.pid)
    stdout, _ = proc.communicate()
    wall = time.monotonic() - started
    peaks = rss.stop()
    cells = 0
    if (out / "results.json").is_file():
        cells = len(json.loads((out / "results.json").read_text("utf-8"))["cells"])
    last = stdout.strip().splitlines()[-1] if stdout.strip() else "(no output)"
    run = {"name": name, "workers": workers, "wall_s": round(wall, 1),
           "cpu_s": round(_cpu_s() - cpu_before, 1), "exit": proc.returncode,
           "cells": cells, "out": str(out), "load": [round(load_before, 2),
                                                     round(os.getloadavg()[0], 2)],
           **peaks, "last_line": last}
    print(_session_line(run), flush=True)  # as it ends: a long bench shows its progress
    return run


def _session_line(run: dict[str, Any]) -> str:
    return (f"{run['name']:<9} -n {run['workers']}: exit {run['exit']}, {run['cells']} cells, "
            f"{run['wall_s']:.1f} s wall, {run['cpu_s']:.1f} s CPU, {_load(run)}, "
            f"peak RSS worker {run['worker_mb']:.0f} MB / main {run['main_mb']:.0f} MB: "
            f"{run['last_line']}")


def rescore(work: Path, out: str, runs: int = 3) -> dict[str, Any]:
    """``sabot rescore`` of a recorded wave, ``runs`` times, each a first run (its own new
    cache of the parsed standard, as a user without SABOT_CACHE_DIR has none): the median
    and fastest wall time, each run's wall and CPU time (user + system), the exit code of
    the last run that failed (else 0) and the load average before the first."""
    load = os.getloadavg()[0]
    walls: list[float] = []
    cpus: list[float] = []
    code = 0
    for n in range(1, runs + 1):
        cpu_before = _cpu_s()
        started = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "pytest_sabot", "rescore", out],
                              cwd=work, env=_env(work / f"cache-rescore-{n}"),
                              capture_output=True, text=True, check=False)
        walls.append(round(time.monotonic() - started, 2))
        cpus.append(round(_cpu_s() - cpu_before, 2))
        code = proc.returncode or code
    return {"wall_s": round(statistics.median(walls), 2), "fastest_s": min(walls),
            "walls_s": walls, "cpu_s": cpus, "exit": code, "load": round(load, 2)}


def _rescore_line(wave: str, rescored: dict[str, Any]) -> str:
    runs = len(rescored["walls_s"])
    return _line(f"sabot rescore of wave {wave}", f"{rescored['wall_s']:.2f} s",
                 f"<= {TARGET_RESCORE_S:.0f} s",
                 rescored["exit"] == 0 and rescored["wall_s"] <= TARGET_RESCORE_S,
                 f"median of {runs} (fastest {rescored['fastest_s']:.2f} s, CPU "
                 f"{statistics.median(rescored['cpu_s']):.2f} s), exit {rescored['exit']}, "
                 f"load {rescored['load']:.1f}")


def overhead(framework: str) -> float | None:
    """The harness/bare ratio one overhead bench prints (autogen: the mean of its two
    configurations)."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / OVERHEAD_BENCHES[framework])],
        cwd=ROOT, env=_env(Path(tempfile.gettempdir()) / "sabot-overhead-cache"),
        capture_output=True, text=True, check=False,
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


def _line(name: str, value: str, target: str, met: bool, note: str = "") -> str:
    return f"{name:<36}{value:>10}   target {target:<9} {'met' if met else 'NOT met':<8}{note}"


def _load(run: dict[str, Any]) -> str:
    return f"load {run['load'][0]:.1f}-{run['load'][1]:.1f}"


def _gain(lines: list[str], report: dict[str, Any], label: str, key: str,
          serial: dict[str, Any], two: dict[str, Any], target: float) -> None:
    gain = serial["wall_s"] / two["wall_s"] if two["wall_s"] else 0.0
    report[key] = round(gain, 3)
    lines.append(_line(label, f"{gain:.2f}x", f">= {target}x", gain >= target,
                       f"{serial['wall_s']:.1f} s / {two['wall_s']:.1f} s, "
                       f"{_load(serial)} / {_load(two)}"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wave", default="1")
    parser.add_argument("--slice", default="--sabot-task=T1",
                        help="the slice's selection (default: --sabot-task=T1)")
    parser.add_argument("--skip-serial", action="store_true",
                        help="do not run the -n 0 sessions (no gains)")
    parser.add_argument("--overhead", action="store_true",
                        help="also run the per-framework overhead benches")
    parser.add_argument("--json", action="store_true", help="also print one JSON object")
    parser.add_argument("--keep", type=Path, default=None,
                        help="run the sessions in this new directory and keep their outputs")
    parser.add_argument("extra", nargs="*", help="extra pytest arguments (after --)")
    parser.add_argument("--rescore-runs", type=int, default=3, metavar="N",
                        help="how many times sabot rescore is timed (default 3: the median)")
    parser.add_argument("--rescore-only", type=Path, metavar="OUT",
                        help="only time sabot rescore of this recorded wave (no session)")
    args = parser.parse_args()
    if args.rescore_only is not None:
        return _rescore_only(args)

    wave = [f"--sabot-wave={args.wave}", *args.extra]
    report: dict[str, Any] = {"wave": args.wave, "extra": args.extra, "cpus": os.cpu_count()}
    lines: list[str] = []
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=False)
    with tempfile.TemporaryDirectory(prefix="sabot-scale-") as tmp:
        work = args.keep.resolve() if args.keep is not None else Path(tmp)
        runs = {"slice_n2": run_session(work, "slice-n2", "2", [*wave, args.slice])}
        if not args.skip_serial:
            runs["slice_n0"] = run_session(work, "slice-n0", "0", [*wave, args.slice])
        runs["wave_n2"] = run_session(work, "wave-n2", "2", wave)
        if not args.skip_serial:
            runs["wave_n0"] = run_session(work, "wave-n0", "0", wave)
        report.update(runs)
        two = runs["wave_n2"]
        lines.append(_line(f"wave {args.wave} -n 2 wall", f"{two['wall_s']:.1f} s",
                           f"<= {TARGET_WALL_S:.0f} s", two["wall_s"] <= TARGET_WALL_S,
                           f"CPU {two['cpu_s']:.0f} s, {_load(two)}"))
        if not args.skip_serial:
            _gain(lines, report, "gain -n 0 -> -n 2, T1 slice", "gain_slice",
                  runs["slice_n0"], runs["slice_n2"], TARGET_GAIN_SLICE)
            _gain(lines, report, f"gain -n 0 -> -n 2, wave {args.wave}", "gain_wave",
                  runs["wave_n0"], two, TARGET_GAIN_WAVE)
        peak = max(runs["wave_n2"]["worker_mb"], runs["slice_n2"]["worker_mb"])
        report["worker_peak_mb"] = peak
        lines.append(_line("peak RSS per worker", f"{peak:.0f} MB",
                           f"<= {TARGET_RSS_MB:.0f} MB", 0 < peak <= TARGET_RSS_MB,
                           f"largest VmHWM of {two['worker_processes']} worker processes"))
        rescored = rescore(work, two["out"], args.rescore_runs)
        report["rescore"] = rescored
        lines.append(_rescore_line(args.wave, rescored))
    if args.overhead:
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
                               f"<= {TARGET_CELL_RATIO:.2f}x", per_cell <= TARGET_CELL_RATIO,
                               f"({each})"))
    print("\n".join(lines))
    print(f"(one run each on this machine, {os.cpu_count()} CPUs, shared: the load average "
          "is the 1-minute one before-after each session; never a gate)")
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print("(PYTHONDONTWRITEBYTECODE is set: every process compiles the modules it imports "
              "from source, pytest's assertion rewriting included)")
    report["bytecode_cache"] = not os.environ.get("PYTHONDONTWRITEBYTECODE")
    report["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    if args.json:
        print(json.dumps(report))
    return 0 if all(r["exit"] == 0 for r in runs.values()) else 1


def _rescore_only(args: argparse.Namespace) -> int:
    """``--rescore-only OUT``: the rescore figure of a wave recorded before (its own wave
    number, read from its results.json)."""
    out = args.rescore_only.resolve()
    wave = str(json.loads((out / "results.json").read_text("utf-8"))["wave"])
    with tempfile.TemporaryDirectory(prefix="sabot-rescore-") as tmp:
        rescored = rescore(Path(tmp), str(out), args.rescore_runs)
    print(_rescore_line(wave, rescored))
    print(f"(this machine, {os.cpu_count()} CPUs, shared: the load average is the 1-minute "
          "one before the first run; never a gate)")
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print("(PYTHONDONTWRITEBYTECODE is set: each run compiles the modules it imports)")
    if args.json:
        print(json.dumps({"wave": wave, "rescore": rescored}))
    return 0 if rescored["exit"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
