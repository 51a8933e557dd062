"""Benchmark: a keyless wave through the plugin, as a user runs it.

    python bench/wave_keyless.py                     # the whole of wave 1, -n 2
    python bench/wave_keyless.py --wave 2 -- --sabot-framework=langgraph

Reports, from one run: wall time, cells per second, and the peak resident memory of every
pytest process (the controller and each xdist worker, read from /proc VmHWM). Targets from
the plugin's issue (wave 1 under 3 minutes with -n 2 on 2 cores; under 600 MB per worker)
are printed beside the measurements, never asserted.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_WALL_S = 180.0
TARGET_RSS_MB = 600.0


def _descendants(pid: int) -> list[int]:
    found: list[int] = []
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return found
    for child in map(int, children):
        found.append(child)
        found.extend(_descendants(child))
    return found


def _hwm_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:80]
    except OSError:
        return "?"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wave", default="1")
    parser.add_argument("-n", "--workers", default="2")
    parser.add_argument("extra", nargs="*", help="extra pytest arguments (after --)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sabot-bench-") as work:
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            f"--sabot-wave={args.wave}",
            "-n",
            args.workers,
            "-q",
            "-p",
            "no:cacheprovider",
            "--sabot-out",
            str(Path(work) / "out"),
            *args.extra,
        ]
        start = time.monotonic()
        proc = subprocess.Popen(
            cmd, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        peaks: dict[int, float] = {}
        names: dict[int, str] = {}
        while proc.poll() is None:
            for pid in [proc.pid, *_descendants(proc.pid)]:
                hwm = _hwm_mb(pid)
                if hwm is not None:
                    peaks[pid] = max(peaks.get(pid, 0.0), hwm)
                    names.setdefault(pid, _cmdline(pid))
            time.sleep(0.5)
        wall = time.monotonic() - start
        output = proc.stdout.read() if proc.stdout else ""
        results_path = Path(work) / "out" / "results.json"
        cells = 0
        if results_path.is_file():
            cells = len(json.loads(results_path.read_text())["cells"])
    print(f"command: {' '.join(cmd[2:])}")
    print(f"exit code: {proc.returncode}")
    print(
        f"wall time: {wall:.1f} s for {cells} recorded cells "
        f"({cells / wall if wall else 0:.2f} cells/s); target < {TARGET_WALL_S:.0f} s "
        f"for wave 1 -> ratio {wall / TARGET_WALL_S:.2f}"
    )
    for pid, peak in sorted(peaks.items()):
        print(f"peak RSS {peak:7.1f} MB  pid {pid}  {names.get(pid, '')}")
    worst = max(peaks.values(), default=0.0)
    print(
        f"largest process: {worst:.0f} MB; target < {TARGET_RSS_MB:.0f} MB per worker -> "
        f"ratio {worst / TARGET_RSS_MB:.2f}"
    )
    print(output.strip().splitlines()[-1] if output.strip() else "(no output)")
    return proc.returncode


if __name__ == "__main__":
    raise SystemExit(main())
