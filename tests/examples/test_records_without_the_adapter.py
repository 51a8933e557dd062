"""Issue 21.6: the records of a session whose adapter is not importable here read and rescore
(SPEC I107). The example adapter runs a keyless slice with ``--sabot-adapter`` from a copy
of its source; then ``sabot rescore``, ``report``, ``inspect`` and ``validate`` run in a
process that cannot import it, and the session's manifest says which adapter ran."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from example_helpers import EXAMPLES, REPO, env_with, root_with

pytestmark = pytest.mark.slow  # whole pytest sessions

EXAMPLE = EXAMPLES / "sabot-adapter-mygraph"
MATRIX = EXAMPLE / "matrix" / "mygraph.yaml"
SEEDS = EXAMPLE / "matrix" / "seeds" / "mygraph.json"
TARGET = "sabot_adapter_mygraph:adapter"


def _without_adapter() -> dict[str, str]:
    """This checkout on the path, and nothing that can import the example."""
    return {**os.environ, "PYTHONPATH": str(REPO)}


def _sabot(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_sabot.commands.cli", *args], cwd=cwd,
        env=_without_adapter(), capture_output=True, text=True, timeout=300, check=False,
    )


def test_I107_a_local_adapters_records_rescore_report_and_inspect_where_it_is_not_installed(
    tmp_path: Path,
) -> None:
    source = tmp_path / "src"
    shutil.copytree(EXAMPLE, source)
    root = root_with(tmp_path / "root", MATRIX, SEEDS)
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly",
         "-p", "no:xdist", "--sabot-wave=mygraph", f"--sabot-root={root}",
         f"--sabot-adapter={TARGET}", "--sabot-task=T1", "--sabot-seed=11",
         "--sabot-operator=baseline,O3", f"--sabot-out={out}"],
        cwd=tmp_path, env=env_with(source), capture_output=True, text=True, timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (manifest_file,) = (out / "sessions").glob("*.json")
    manifest = json.loads(manifest_file.read_text())
    assert manifest["matrix"] == "mygraph" and manifest["agent"] is None
    (record,) = [a for a in manifest["adapters"] if a["framework"] == "mygraph"]
    assert record["origin"] == "--sabot-adapter" and record["target"] == TARGET
    assert record["kept"] and record["mapping"].endswith("mygraph/mapping.yaml")
    kept = out / record["mapping"]
    assert kept.read_bytes() == (source / "sabot_adapter_mygraph" / "mapping.yaml").read_bytes()
    restored = tmp_path / "kept-src"
    shutil.copytree(source, restored)
    shutil.rmtree(source)  # the adapter is gone from this machine

    probe = subprocess.run([sys.executable, "-c", "import sabot_adapter_mygraph"],
                           env=_without_adapter(), capture_output=True, text=True, check=False)
    assert probe.returncode != 0
    assert manifest["root"] == str(root.resolve())  # rescore and inspect find it again
    rescored = _sabot(tmp_path, "rescore", str(out))
    assert rescored.returncode == 0, rescored.stdout + rescored.stderr
    assert "rescored 2 cells under v0.2.1: identical to results.json" in rescored.stdout
    reported = _sabot(tmp_path, "report", str(out))
    assert reported.returncode == 0, reported.stdout + reported.stderr
    assert "mygraph-default" in reported.stdout
    inspected = _sabot(tmp_path, "inspect", str(out / "cells" / "mygraph-default-O3-T1-s11"),
                       "--json")
    assert inspected.returncode == 0, inspected.stdout + inspected.stderr
    timeline = json.loads(inspected.stdout)
    assert timeline["verdict"] == "DETECTED_HARD", timeline
    assert not timeline["notes"], timeline["notes"]
    validated = _sabot(tmp_path, "validate", str(root))
    text = validated.stdout + validated.stderr
    assert "Traceback" not in text and "validation errors" not in text
    assert validated.returncode == 2  # the matrix cannot run here: said, with its file
    assert "cells/mygraph.yaml: field 'frameworks.0'" in text
    assert "no adapter of 'mygraph' is installed here" in text, text
    # Where the adapter is importable again, validate takes it as pytest does.
    with_adapter = subprocess.run(
        [sys.executable, "-m", "pytest_sabot.commands.cli", "validate", str(root),
         f"--sabot-adapter={TARGET}"], cwd=tmp_path, env=env_with(restored),
        capture_output=True, text=True, timeout=300, check=False)
    assert with_adapter.returncode == 0, with_adapter.stdout + with_adapter.stderr
    assert "wave mygraph: ok" in with_adapter.stdout, with_adapter.stdout
    exported = _sabot(tmp_path, "export", str(out), "--format", "junit")
    assert exported.returncode == 0, exported.stdout + exported.stderr
    assert "mygraph-default-O3-T1-s11" in exported.stdout
    moved = tmp_path / "moved-root"
    root.rename(moved)  # the root the session recorded is gone: said, with the field
    lost = _sabot(tmp_path, "rescore", str(out))
    assert lost.returncode == 2 and "field 'root'" in lost.stderr, lost.stdout + lost.stderr
    again = _sabot(tmp_path, "rescore", str(out), f"--sabot-root={moved}")
    assert again.returncode == 0, again.stdout + again.stderr
    for what in (rescored, reported, inspected, validated, exported, lost):
        assert "Traceback" not in what.stdout + what.stderr
