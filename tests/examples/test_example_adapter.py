"""The example external adapter, examples/sabot-adapter-mygraph (docs/ADAPTERS.md, rules AP2
and AP4): a user's LangGraph graph that knows nothing of Sabot, wrapped by an adapter
package that is installed for real and found through the ``pytest_sabot.adapters`` entry
points, exactly like the shipped frameworks; its candidate row runs keyless through the
plugin and is scored by the same scorer through the package's own mapping file."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from example_helpers import EXAMPLES, env_with, pip_install, root_with

from pytest_sabot.matrix.standard import registration_hash

pytestmark = pytest.mark.slow  # a pip install and whole pytest sessions

EXAMPLE = EXAMPLES / "sabot-adapter-mygraph"
MATRIX = EXAMPLE / "matrix" / "mygraph.yaml"
SEEDS = EXAMPLE / "matrix" / "seeds" / "mygraph.json"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example package, installed with pip into a directory of its own."""
    return pip_install(EXAMPLE, tmp_path_factory.mktemp("site") / "site")


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return root_with(tmp_path_factory.mktemp("root") / "root", MATRIX, SEEDS)


def _pytest(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False,
    )


def test_AP2_the_shipped_frameworks_and_the_example_load_through_one_entry_point_group(
        installed: Path, tmp_path: Path) -> None:
    probe = (
        "import json, sys\n"
        "from pytest_sabot.core.frameworks import ADAPTERS, adapter\n"
        "print(json.dumps({n: [ADAPTERS.entry(n).origin, ADAPTERS.entry(n).target,\n"
        "                      adapter(n).mapping_path(__import__('pathlib').Path('.')).name]\n"
        "                  for n in ADAPTERS.names()}))\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in\n"
        "             ('langgraph', 'langchain_openai', 'mygraph')))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env_with(installed),
                          capture_output=True, text=True, timeout=120, check=True)
    found_text, imported = done.stdout.strip().split("\n")
    found = json.loads(found_text)
    assert list(found)[:3] == ["langgraph", "crewai", "autogen"]
    assert found["mygraph"][:2] == ["entry point of sabot-adapter-mygraph",
                                    "sabot_adapter_mygraph:adapter"]
    assert found["mygraph"][2] == "mapping.yaml"  # shipped inside the installed package
    for shipped in ("langgraph", "crewai", "autogen", "agent_framework"):
        assert found[shipped][0] == "entry point of pytest-sabot", found[shipped]
    # Reading every declaration, the example's included, imported no framework.
    assert imported == "[]"


def test_AP2_the_example_row_runs_keyless_through_the_plugin(
        installed: Path, root: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = _pytest(tmp_path, env_with(installed), "--sabot-wave=mygraph", f"--sabot-root={root}",
                   "--sabot-task=T1", "--sabot-seed=11", "--sabot-operator=O1,O3",
                   "--sabot-model=sim:vigilant", f"--sabot-out={out}", "-n", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((out / "results.json").read_text())
    assert [row["row"] for row in results["scoreboard"]["rows"]] == ["mygraph-default"]
    cells = {c["cell_id"]: c for c in results["cells"]}
    assert cells["mygraph-default-baseline-T1-s11"]["status"] == "passed"
    for operator in ("O1", "O3"):
        cell = cells[f"mygraph-default-{operator}-T1-s11"]
        assert cell["excluded"] is None, cell
        assert cell["detection"] == "DETECTED_HARD", cell
        assert {a["row"] for a in cell["acts"]} <= {"reject-checker", "retry-revise", "flags"}
        assert "reject-checker" in {a["row"] for a in cell["acts"]}
    # The graph's surfaces became canonical events, around the harness's own seams.
    # (read as JSON: this process has not installed the example, so its trace model does
    # not know the framework name)
    lines = (out / "cells" / "mygraph-default-O3-T1-s11" / "events.jsonl").read_text()
    events = [json.loads(line) for line in lines.splitlines() if line.strip()]
    kinds = [(e["kind"], e["component"]) for e in events]
    assert ("review", "checker") in kinds and ("retry", "worker") in kinds
    injection = next(i for i, e in enumerate(events) if e["kind"] == "injection")
    assert events[injection + 1]["kind"] == "message"  # O3 landed in the handoff
    assert any(e["kind"] == "review" for e in events[injection:])
    assert events[0]["kind"] == "run_start"
    assert events[0]["data"]["framework"] == "mygraph"
    assert events[0]["data"]["versions"]["langgraph"] == "1.2.9"
    # The adapter's own mapping file is part of what the row is registered under.
    assert results["registration_hash"] != registration_hash(root)


def test_AP4_the_adapters_own_mapping_is_validated_like_the_shipped_ones(
        root: Path, tmp_path: Path) -> None:
    # The same root loaded first with the adapter's valid mapping in another folder, into the
    # same parse cache: the broken copy below is still read and refused, never the cached one.
    cache = {"SABOT_CACHE_DIR": str(tmp_path / "cache")}
    valid = tmp_path / "valid"
    shutil.copytree(EXAMPLE, valid)
    seeded = _pytest(tmp_path, {**env_with(valid), **cache}, "--sabot-wave=mygraph",
                     f"--sabot-root={root}", "--sabot-adapter=sabot_adapter_mygraph:adapter",
                     "--collect-only", "-q")
    assert seeded.returncode == 0, seeded.stdout + seeded.stderr
    assert list((tmp_path / "cache").rglob("*.pickle"))
    source = tmp_path / "src"
    shutil.copytree(EXAMPLE, source)
    mapping = source / "sabot_adapter_mygraph" / "mapping.yaml"
    mapping.write_text(mapping.read_text().replace("act: retry_with_reason", "act: retried"))
    done = _pytest(tmp_path, {**env_with(source), **cache}, "--sabot-wave=mygraph",
                   f"--sabot-root={root}", "--sabot-adapter=sabot_adapter_mygraph:adapter",
                   f"--sabot-out={tmp_path / 'out'}")
    text = done.stdout + done.stderr
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, text
    assert str(mapping) in text and "revisions.0.acts.1.act" in text and "retried" in text
    assert "Traceback" not in text and not (tmp_path / "out").exists()


def test_AP2_sabot_plan_takes_the_adapter_of_a_module_that_is_not_installed(
        root: Path, tmp_path: Path) -> None:
    sabot = [sys.executable, "-m", "pytest_sabot.commands.cli", "plan", "--sabot-wave=mygraph",
             f"--sabot-root={root}", "--sabot-model=openai:gpt-5.6-terra"]

    def plan(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*sabot, *extra], cwd=tmp_path, env=env_with(EXAMPLE),
                              capture_output=True, text=True, timeout=120, check=False)

    unregistered = plan()
    assert unregistered.returncode == 2
    assert str(root / "cells" / "mygraph.yaml") in unregistered.stderr
    assert "no adapter of 'mygraph' is installed here" in unregistered.stderr
    done = plan("--sabot-adapter=sabot_adapter_mygraph:adapter")
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines() if line.startswith("mygraph-")]
    assert [r[:2] for r in rows] == [["mygraph-default", "175"]]
    broken = plan("--sabot-adapter=no_such_module_here:adapter")
    assert broken.returncode == 2
    assert "--sabot-adapter=no_such_module_here:adapter: No module named" in broken.stderr
