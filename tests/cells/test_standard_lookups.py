"""The standard's lookups built once give what a scan of its cells gives."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from pytest_sabot.matrix.standard import Standard, load_standard, registration_hash

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wave1() -> Standard:
    return load_standard(1)


def test_standard_cell_lookup_equals_the_scan(wave1: Standard) -> None:
    for cell in wave1.cells:
        assert wave1.cell(cell.id) is next(c for c in wave1.cells if c.id == cell.id)
    with pytest.raises(KeyError, match="not registered in wave 1"):
        wave1.cell("langgraph-default-O1-T1-s99")


def test_standard_paired_operators_equal_the_scan(wave1: Standard) -> None:
    for base in (c for c in wave1.cells if c.is_baseline):
        scanned = sorted({c.operator for c in wave1.cells if c.operator is not None
                          and not c.carved_out and c.baseline_id == base.id})
        assert wave1.paired_operators(base.id) == scanned
    assert wave1.paired_operators("no-such-baseline") == []


def test_standard_lookups_follow_a_replaced_cell_list(wave1: Standard) -> None:
    std = dataclasses.replace(wave1, cells=list(wave1.cells))
    last = std.cells[-1]
    assert std.cell(last.id) is last
    std.cells = std.cells[:-1]
    with pytest.raises(KeyError):
        std.cell(last.id)
    assert last.operator not in std.paired_operators(last.baseline_id) or any(
        c.operator == last.operator and c.baseline_id == last.baseline_id for c in std.cells
    )


def test_standard_registration_hash_once_per_standard(wave1: Standard) -> None:
    std = load_standard(1)
    assert std.registration_hash() == std.registration_hash() == wave1.registration_hash()
    assert std.registration_hash() != registration_hash(std.root)  # the wave's own skips


def test_I133_registration_hash_is_of_the_files_loaded(tmp_path: Path) -> None:
    """A file edited after the standard was loaded leaves the loaded standard's hash as it
    was (its cells, tasks and rules are the unedited ones); the next load sees the edit."""
    root = tmp_path / "root"
    for folder in ("cells", "tasks", "mappings"):
        shutil.copytree(ROOT / folder, root / folder)
    std = load_standard(1, root)
    loaded = std.registration_hash()
    criterion = root / "tasks" / "T1" / "private" / "criterion.yaml"
    criterion.write_text(criterion.read_text("utf-8") + "\n# edited\n", encoding="utf-8")
    assert std.registration_hash() == loaded
    assert load_standard(1, root).registration_hash() != loaded
