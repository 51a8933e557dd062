"""bench/wave_profile.py sums a py-spy profile by owner. Its by-module shares are of the
processes that ran the cells: the xdist workers, or the controller in a session without
workers (a ``-p no:xdist`` slice), so no share can pass 100 %."""

from __future__ import annotations

import re
from types import ModuleType

from bench_modules import load_bench


def _bench() -> ModuleType:
    return load_bench("wave_profile")


def _raw(*stacks: tuple[int, str, int]) -> str:
    """py-spy raw lines: ``process A;[process B;]frame;frame count`` by process depth."""
    lines = []
    for depth, frames, count in stacks:
        processes = ";".join(f"process {100 + i}:\"python -m pytest\"" for i in range(depth))
        lines.append(f"{processes};{frames} {count}")
    return "\n".join(lines) + "\n"


HARNESS = "write (pytest_sabot/core/trace_io.py:10)"
FRAMEWORK = "kickoff (crewai/crew.py:20)"


def _shares(text: str) -> list[float]:
    return [float(s) for s in re.findall(r"^\s+\d+\s+([\d.]+)%", text, flags=re.M)]


def test_wave_profile_shares_without_workers_are_of_the_controller() -> None:
    bench = _bench()
    raw = _raw((1, HARNESS, 30), (1, FRAMEWORK, 70))
    text = bench.report(bench.summarise(bench.read_raw(raw)), top=5)
    assert "share of the controller's busy samples" in text
    assert sorted(_shares(text)) == [30.0, 70.0]


def test_wave_profile_shares_with_workers_are_of_the_workers() -> None:
    bench = _bench()
    raw = _raw((1, HARNESS, 500), (2, HARNESS, 25), (2, FRAMEWORK, 75))
    text = bench.report(bench.summarise(bench.read_raw(raw)), top=5)
    assert "share of the workers' busy samples" in text
    assert sorted(_shares(text)) == [25.0, 75.0]
