"""bench/growth.py's synthetic wave is read by the product as a recorded wave: a tiny
keyless slice replicated to twice its seeds builds, rescores identical, indexes and renders
with every copied cell counted; and the lookups that keep scoring a big wave linear
(``Standard.cell``'s index, ``Standard.paired_operators``) answer what a scan of the
registry does."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from types import ModuleType

import pytest
from bench_modules import load_bench

from pytest_sabot.commands.cli import main as sabot
from pytest_sabot.core.trace_io import read_trace
from pytest_sabot.history import index_output, list_runs
from pytest_sabot.matrix.standard import load_standard
from pytest_sabot.report.html import write_results_html
from pytest_sabot.results import read_results
from pytest_sabot.results.adjudicate import read_record


def _bench() -> ModuleType:
    return load_bench("growth")


def test_growth_synthetic_wave_twice_the_seeds_is_read_as_a_complete_wave(
    tiny: Path, tmp_path: Path
) -> None:
    growth = _bench()
    out, root, made = growth.synthetic_wave(tiny, tmp_path, 2)
    assert made == 6
    std = load_standard(1, root)
    assert sorted(c.id for c in std.cells) == sorted(
        f"langgraph-default-{op}-T1-s{seed}" for op in ("baseline", "O1", "O3")
        for seed in (11, 12))
    for cell in std.cells:  # every copy is a whole record of its own cell
        record = read_record(out, cell.id)
        assert record.kind == "run", (cell.id, record.damage)
        assert record.outcome is not None
        assert record.outcome.registration_hash == std.registration_hash()
        start = read_trace(out / "cells" / cell.id).start
        assert (start.cell_id, start.seed) == (cell.id, cell.seed)

    results = growth.session_end_build(out, root)
    assert len(results.cells) == 6
    assert results.selection.complete and not results.partial_reasons
    assert results.selection.registered == 6 and not results.selection.unpaired
    assert results.registration_hash == std.registration_hash()
    # Seed 12 is seed 11's records scored again; a baseline's clean fire is read for the
    # operators its wave registers, here the two the slice recorded.
    ignored = {"cell_id", "seed", "clean_fire"}
    source = {v.cell_id: v for v in read_results(tiny).cells}
    for verdict in results.cells:
        original = source[verdict.cell_id.replace(f"-s{verdict.seed}", "-s11")]
        assert verdict.model_dump(exclude=ignored) == original.model_dump(exclude=ignored)
        if verdict.kind == "baseline":
            assert verdict.clean_fire == {  # type: ignore[union-attr]
                op: original.clean_fire[op] for op in ("O1", "O3")}  # type: ignore[union-attr]

    said = io.StringIO()
    with contextlib.redirect_stdout(said):
        code = sabot(["rescore", str(out)])
    assert code == 0, said.getvalue()
    assert said.getvalue().splitlines()[0] == (
        "rescored 6 cells under v0.1.3: identical to results.json")

    report = index_output(out, tmp_path / "history.sqlite")
    assert not report.problems
    (listed,) = list_runs(tmp_path / "history.sqlite")
    assert (listed.selected, listed.recorded) == (6, 6)
    assert write_results_html(out).stat().st_size > 0


def test_growth_each_step_runs_in_its_own_interpreter(tiny: Path, tmp_path: Path) -> None:
    growth = _bench()
    out, root, _ = growth.synthetic_wave(tiny, tmp_path, 2)
    build = growth._child("build", out, root)
    assert build["cells"] == 6 and build["seconds"] > 0 and build["peak_mb"] > 0
    assert "identical" in growth._child("rescore", out, root)["said"]


def test_growth_standard_cell_index_finds_what_a_scan_of_the_registry_finds() -> None:
    std = load_standard(2)
    for cell in std.cells:
        assert std.cell(cell.id) is next(c for c in std.cells if c.id == cell.id)
    with pytest.raises(KeyError, match="not registered in wave 2"):
        std.cell("langgraph-default-O1-T1-s99")
    std.cells = std.cells[:3]  # another list: the index follows it
    with pytest.raises(KeyError):
        std.cell(load_standard(2).cells[5].id)
    assert std.cell(std.cells[2].id) is std.cells[2]


def test_growth_paired_operators_equal_each_baselines_scan_carve_outs_left_out() -> None:
    std = load_standard(2)  # wave 2 carves out autogen x guardrail x O2/O3/O6
    for base in (c for c in std.cells if c.is_baseline):
        scan = sorted({c.operator for c in std.cells if c.operator is not None
                       and not c.carved_out and c.baseline_id == base.id})
        assert std.paired_operators(base.id) == scan
    assert std.paired_operators("autogen-guardrail-baseline-T1-s11") == ["O1", "O4", "O5"]
