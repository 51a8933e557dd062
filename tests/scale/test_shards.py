"""Shards of a wave and their merge (SPEC I72): the split keeps baseline groups whole and
is the same whatever the order, two shards merged equal one run of the same selection, and
shards that cannot be one run are refused before anything is copied."""

from __future__ import annotations

import hashlib
import json
import random
import shutil
from pathlib import Path

import pytest
from scale_runs import SLICE, Run, run

from pytest_sabot.commands.cli import main as sabot
from pytest_sabot.commands.merge import comparable
from pytest_sabot.matrix.standard import load_standard
from pytest_sabot.results import read_results
from pytest_sabot.session import shard as shard_mod


@pytest.fixture(scope="module")
def wave1() -> object:
    return load_standard("1")


def _loads(owner: dict[str, int], cells: list[object], count: int) -> list[int]:
    loads = [0] * count
    for cell in cells:
        loads[owner[cell.id] - 1] += 1  # type: ignore[attr-defined]
    return loads


def test_I72_the_split_keeps_baseline_groups_whole_and_ignores_the_order(wave1: object) -> None:
    cells = [c for c in wave1.cells if c.seed in (11, 12)]  # type: ignore[attr-defined]
    for count in (2, 3, 5):
        owner = shard_mod.assign(cells, count)
        shuffled = list(cells)
        random.Random(count).shuffle(shuffled)
        assert shard_mod.assign(shuffled, count) == owner
        assert set(owner.values()) == set(range(1, count + 1))
        for group in shard_mod.groups(cells).values():
            assert len({owner[c.id] for c in group}) == 1
        loads = _loads(owner, cells, count)
        biggest = max(len(g) for g in shard_mod.groups(cells).values())
        assert max(loads) - min(loads) <= biggest


def test_I72_fault_cells_without_their_baselines_pull_each_baseline_into_one_shard(
    wave1: object,
) -> None:
    o1 = [c for c in wave1.cells if c.operator == "O1" and c.seed == 11]  # type: ignore[attr-defined]
    owner = shard_mod.assign(o1, 3)
    pulled: dict[str, set[int]] = {}
    for cell in o1:
        pulled.setdefault(cell.baseline_id, set()).add(owner[cell.id])
    assert pulled and all(len(shards) == 1 for shards in pulled.values())


def _tree(directory: Path) -> dict[str, str]:
    return {
        str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def sharded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    """One run of the slice, and the same slice as two shards."""
    base = tmp_path_factory.mktemp("shards")
    runs = {
        "one": run(base / "one", *SLICE, "-p", "no:xdist"),
        "s1": run(base / "s1", *SLICE, "--sabot-shard=1/2", "-p", "no:xdist"),
        "s2": run(base / "s2", *SLICE, "--sabot-shard=2/2", "-n", "2"),
    }
    for name, done in runs.items():
        assert done.returncode == 0, f"{name}: {done.describe()}"
    return runs


@pytest.mark.slow
def test_I72_two_shards_merged_equal_one_run_of_the_same_selection(
    sharded: dict[str, Run], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    s1, s2, one = sharded["s1"], sharded["s2"], sharded["one"]
    ids1, ids2 = set(s1.raw["selection"]["cell_ids"]), set(s2.raw["selection"]["cell_ids"])
    assert ids1 and ids2 and not ids1 & ids2
    assert ids1 | ids2 == set(one.raw["selection"]["cell_ids"])
    assert s1.raw["selection"]["filters"]["shard"] == ["1/2"]
    before = {d: _tree(d) for d in (s1.out, s2.out)}
    out = tmp_path / "merged"
    assert sabot(["merge", str(s2.out), str(s1.out), "--out", str(out)]) == 0
    merged = json.loads((out / "results.json").read_text("utf-8"))
    assert comparable(merged) == comparable(one.raw)
    assert merged["selection"]["complete"] and merged["cells"]
    assert merged["spend"]["calls"] == s1.raw["spend"]["calls"] + s2.raw["spend"]["calls"]
    record = json.loads((out / "merge.json").read_text("utf-8"))
    assert [s["shard"] for s in record["shards"]] == ["1/2", "2/2"]
    # the shards are read, never changed; the merge rescores to itself
    assert {d: _tree(d) for d in (s1.out, s2.out)} == before
    capsys.readouterr()
    assert sabot(["rescore", str(out)]) == 0
    assert "identical to results.json" in capsys.readouterr().out


def test_I72_a_merge_is_recorded_in_the_run_history_as_a_run_of_its_own(
    sharded: dict[str, Run], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_sabot.history import list_runs, load_run_results

    s1, s2 = sharded["s1"], sharded["s2"]
    history = tmp_path / "history.sqlite"
    out = tmp_path / "merged"
    assert sabot(["merge", str(s1.out), str(s2.out), "--out", str(out),
                  "--history", str(history)]) == 0
    assert f"in {history}" in capsys.readouterr().out
    (run,) = list_runs(history)
    assert run.out_dir == str(out.resolve())
    loaded = load_run_results(history, run.run_id)
    assert loaded.note == "" and loaded.results == read_results(out)
    # Its JUnit export names the run as the history does, and its status as history lists it.
    junit = tmp_path / "merged.xml"
    assert sabot(["export", str(out), "--format", "junit", "--out", str(junit)]) == 0
    import xml.etree.ElementTree as ET

    props = {p.get("name"): p.get("value") for p in ET.parse(junit).iter("property")}
    assert props["sabot.run_id"] == run.run_id and props["sabot.status"] == run.status
    assert sabot(["merge", str(s1.out), str(s2.out), "--out", str(tmp_path / "again"),
                  "--history", "none"]) == 0
    assert len(list_runs(history)) == 1


def test_I72_a_damaged_record_in_a_shard_is_named_and_the_merge_exits_2(
    sharded: dict[str, Run], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    s1 = _copy(sharded["s1"], tmp_path / "s1")
    cell = next(c.cell_id for c in read_results(s1).cells if "-O" in c.cell_id)
    trace = s1 / "cells" / cell / "events.jsonl"
    lines = trace.read_text("utf-8").splitlines()
    trace.write_text("\n".join(lines[: len(lines) // 2]) + "\n", "utf-8")
    assert sabot(["merge", str(s1), str(sharded["s2"].out), "--out", str(tmp_path / "m"),
                  "--history", "none"]) == 2
    err = capsys.readouterr().err
    assert f"damaged record: cell {cell}: " in err and "events.jsonl" in err
    assert "is not the whole selection" in err


def _copy(run: Run, target: Path) -> Path:
    shutil.copytree(run.out, target)
    return target


def _edit(directory: Path, **changes: object) -> None:
    path = directory / "results.json"
    data = json.loads(path.read_text("utf-8"))
    for dotted, value in changes.items():
        node = data
        *parents, last = dotted.split("__")
        for key in parents:
            node = node[key]
        node[last] = value
    path.write_text(json.dumps(data), "utf-8")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"registration_hash": "0" * 64}, "registration_hash"),
        ({"rules": "v9.9.9"}, "'rules'"),
        ({"selection__filters__shard": ["1/3"]}, "same N"),
        ({"selection__filters__shard": ["1/2"]}, "each shard once"),
        ({"selection__filters__task": ["T2"]}, "selection.filters"),
    ],
)
def test_I72_merge_refuses_shards_that_cannot_be_one_run(
    sharded: dict[str, Run],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    change: dict[str, object],
    words: str,
) -> None:
    first = _copy(sharded["s1"], tmp_path / "a")
    second = _copy(sharded["s2"], tmp_path / "b")
    _edit(second, **change)
    out = tmp_path / "merged"
    assert sabot(["merge", str(first), str(second), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert words in err and "results.json" in err and "Traceback" not in err
    assert not out.exists()  # refused before anything was copied


@pytest.mark.slow
def test_I72_merge_refuses_a_missing_shard_and_an_output_with_records(
    sharded: dict[str, Run], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    s1, s2 = sharded["s1"], sharded["s2"]
    assert sabot(["merge", str(s1.out), "--out", str(tmp_path / "m")]) == 2
    assert "missing 2/2" in capsys.readouterr().err
    typo = tmp_path / "shard-2-typo"
    assert sabot(["merge", str(s1.out), str(typo), "--out", str(tmp_path / "m")]) == 2
    assert capsys.readouterr().err.strip() == (
        f"sabot: {typo}: expected an output directory of pytest --sabot-wave (or its "
        "results.json), got 'no such file or directory'"
    )
    assert not (tmp_path / "m").exists()
    used = tmp_path / "used"
    (used / "cells").mkdir(parents=True)
    assert sabot(["merge", str(s1.out), str(s2.out), "--out", str(used)]) == 2
    assert "--out" in capsys.readouterr().err
    assert list(used.iterdir()) == [used / "cells"]


@pytest.mark.slow
def test_I72_more_shards_than_baseline_groups_is_refused_before_anything_runs(
    tmp_path: Path,
) -> None:
    done = run(tmp_path / "many", *SLICE, "--sabot-shard=3/3", "-p", "no:xdist")
    assert done.returncode == pytest.ExitCode.USAGE_ERROR
    assert "--sabot-shard=3/3" in done.stderr and "2 baseline group" in done.stderr
    assert not done.out.exists()
    bad = run(tmp_path / "bad", *SLICE, "--sabot-shard=3/2", "-p", "no:xdist")
    assert bad.returncode == pytest.ExitCode.USAGE_ERROR
    assert "--sabot-shard" in bad.stderr and "K/N" in bad.stderr
