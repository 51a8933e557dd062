"""The parsed standard is kept between processes, and never used once a file it was made
from has changed (pytest_sabot.matrix.standard_cache)."""

from __future__ import annotations

import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.matrix.standard import load_standard
from pytest_sabot.matrix.standard_cache import cache_dir, load_standard_cached, standard_key

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the standard's files, and a cache of this test's own."""
    copy = tmp_path / "root"
    for folder in ("cells", "tasks", "mappings"):
        shutil.copytree(ROOT / folder, copy / folder)
    monkeypatch.setenv("SABOT_CACHE_DIR", str(tmp_path / "cache"))
    return copy


def _entry(root: Path) -> Path:
    folder = cache_dir()
    assert folder is not None
    return folder / f"{standard_key('1', root.resolve(), None)}.pickle"


def _mark_entry(path: Path) -> None:
    """Rewrite the entry with one cell less, so a load that returns 1,049 cells read it."""
    entry = pickle.loads(path.read_bytes())
    entry["standard"].cells = entry["standard"].cells[:-1]
    path.write_bytes(pickle.dumps(entry))


def test_cache_entry_read_back_equals_the_parse(root: Path) -> None:
    parsed = load_standard("1", root)
    first = load_standard_cached("1", root)
    assert _entry(root).is_file()
    again = load_standard_cached("1", root)
    assert [c.id for c in again.cells] == [c.id for c in parsed.cells]
    assert again.registration_hash() == parsed.registration_hash() == first.registration_hash()
    assert again.rules == parsed.rules and again.mappings == parsed.mappings
    assert again.anchors == parsed.anchors and again.defects == parsed.defects
    for task in parsed.wave.tasks:
        assert again.private(task) == parsed.private(task)


def test_cache_entry_is_used_when_nothing_changed(root: Path) -> None:
    load_standard_cached("1", root)
    _mark_entry(_entry(root))
    assert len(load_standard_cached("1", root).cells) == 1049  # the entry, not a parse


def test_cache_edit_a_task_file_the_entry_is_not_used(root: Path) -> None:
    load_standard_cached("1", root)
    old = _entry(root)
    _mark_entry(old)
    task_file = root / "tasks" / "T1" / "public" / "task.yaml"
    task_file.write_text(task_file.read_text("utf-8") + "\n# edited\n", encoding="utf-8")
    std = load_standard_cached("1", root)
    assert len(std.cells) == 1050  # parsed again from the edited files
    assert _entry(root) != old and _entry(root).is_file()


@pytest.mark.parametrize("edit", ["private criterion", "wave file", "rule book", "new file"])
def test_cache_any_file_of_the_root_changes_the_key(root: Path, edit: str) -> None:
    before = standard_key("1", root, None)
    target = {
        "private criterion": root / "tasks" / "T1" / "private" / "criterion.yaml",
        "wave file": root / "cells" / "wave1.yaml",
        "rule book": root / "mappings" / "rules.yaml",
        "new file": root / "tasks" / "T1" / "notes.txt",
    }[edit]
    text = target.read_text("utf-8") if target.is_file() else ""
    target.write_text(text + "\n# edited\n", encoding="utf-8")
    assert standard_key("1", root, None) != before


def test_cache_a_broken_file_is_reported_as_without_the_cache(root: Path) -> None:
    load_standard_cached("1", root)
    (root / "cells" / "wave1.yaml").write_text("wave: [unclosed\n", encoding="utf-8")
    with pytest.raises(SabotDataError, match=r"wave1\.yaml"):
        load_standard_cached("1", root)


def test_cache_a_damaged_entry_is_ignored_and_replaced(root: Path) -> None:
    load_standard_cached("1", root)
    _entry(root).write_bytes(b"not a pickle")
    assert len(load_standard_cached("1", root).cells) == 1050
    assert pickle.loads(_entry(root).read_bytes())["key"] == _entry(root).stem


def test_cache_other_rules_other_entry(root: Path) -> None:
    load_standard_cached("1", root)
    _mark_entry(_entry(root))
    rules = load_standard("1", root).rules.version
    assert len(load_standard_cached("1", root, rules=rules).cells) == 1050


def test_cache_off(root: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SABOT_CACHE_DIR", "off")
    assert cache_dir() is None
    assert len(load_standard_cached("1", root).cells) == 1050
    assert not (tmp_path / "cache").exists()


def test_cache_controller_parses_workers_read(root: Path, tmp_path: Path) -> None:
    """A session with two workers writes one entry (the controller's parse) and its
    workers' loads find it: three processes, one entry, the same cells."""
    folder = cache_dir()
    assert folder is not None
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--sabot-wave=1", f"--sabot-root={root}", "-n", "2",
         "--collect-only", "-q", "-p", "no:cacheprovider", f"--sabot-out={out}"],
        cwd=tmp_path, capture_output=True, text=True, check=False,
        env={**_env(), "SABOT_CACHE_DIR": str(folder.parent)},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [p.name for p in folder.glob("*.pickle")] == [_entry(root).name]


def _env() -> dict[str, str]:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "SABOT_"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def test_cache_an_unusable_cache_dir_parses_as_without_it(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cache path that is a file, not a folder: nothing is kept, the wave loads."""
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("", encoding="utf-8")
    monkeypatch.setenv("SABOT_CACHE_DIR", str(blocker))
    assert len(load_standard_cached("1", root).cells) == 1050
    assert blocker.read_text(encoding="utf-8") == ""


def test_cache_a_folder_others_may_write_to_is_not_read(root: Path) -> None:
    """An entry is read back as Python objects: never from a folder another user could
    have written it to."""
    load_standard_cached("1", root)
    _mark_entry(_entry(root))
    folder = cache_dir()
    assert folder is not None
    folder.chmod(0o777)
    assert len(load_standard_cached("1", root).cells) == 1050  # parsed, the entry not read
    folder.chmod(0o700)
    assert len(load_standard_cached("1", root).cells) == 1050  # rewritten by that parse
