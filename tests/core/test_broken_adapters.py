"""An installed adapter that does not load is named with its entry point, where it was
registered and what was expected (ADAPTERS.md section 7): a session whose wave runs it is
refused before anything runs (exit 4); a session of another wave runs and says so at its
end; ``sabot validate`` checks every adapter's declaration and its ``run``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_sabot.core.frameworks import (
    ADAPTERS,
    ENTRY_POINT_GROUP,
    adapter,
    adapters,
    framework_names,
    unloadable,
)
from pytest_sabot.core.registry import RegistryError

REPO = Path(__file__).resolve().parents[2]
ORIGIN = "entry point of broken-adapter"

BODIES = {
    "import-error": "import not_a_module_anywhere\n",
    "syntax-error": "def adapter(:\n",
    "raises": "def adapter():\n    raise RuntimeError('the factory fell over')\n",
    "wrong-type": "def adapter():\n    return {'name': 'broken'}\n",
    "other-name": (
        "from pytest_sabot.core.frameworks import FrameworkAdapter\n"
        "def adapter():\n    return FrameworkAdapter(name='other', run='m:run')\n"
    ),
    "bad-name": (
        "from pytest_sabot.core.frameworks import FrameworkAdapter\n"
        "def adapter():\n    return FrameworkAdapter(name='Broken', run='m:run')\n"
    ),
}


def _declaring(**fields: str) -> str:
    """An adapter module whose declaration adds ``fields`` (their Python source)."""
    given = "".join(f", {name}={value}" for name, value in fields.items())
    return ("from pytest_sabot.core.frameworks import FrameworkAdapter\n"
            f"def adapter():\n    return FrameworkAdapter(name='broken', run='m:run'{given})\n")


# Each field of the declaration with a value of the wrong kind: refused when the adapter is
# read, naming the field and what it expected (never an INTERNALERROR once a session runs).
BAD_FIELDS = {
    "pin-not-a-string": (_declaring(packages="{'mygraph': 1.0}"),
                         "packages['mygraph']: expected a version string"),
    "pin-not-a-version": (_declaring(packages="{'mygraph': 'latest'}"),
                          "packages['mygraph']: expected a version such as '1.2.9'"),
    "packages-a-list": (_declaring(packages="['mygraph']"),
                        "packages: expected a mapping of distribution -> version"),
    "modules-a-string": (_declaring(modules="'mygraph'"),
                         "modules: expected a tuple of strings, got 'mygraph'"),
    "warning-not-a-regex": (_declaring(warning_modules="('mygraph(',)"),
                            "warning_modules: 'mygraph(' is not a regular expression"),
    "cost-not-three": (_declaring(cost_per_run="{'default': (6, 900)}"),
                       "cost_per_run['default']: expected (model calls, prompt tokens"),
    "cost-negative": (_declaring(cost_per_run="{'default': (6, -1, 300)}"),
                      "three numbers >= 0, got (6, -1, 300)"),
    "extra-empty": (_declaring(extra="''"), "extra: expected None or a non-empty string"),
    "flags-configs-a-string": (_declaring(flags_head_configs="'guardrail'"),
                               "flags_head_configs: expected a tuple of strings"),
    "one-at-a-time-a-word": (_declaring(one_run_at_a_time="'yes'"),
                             "one_run_at_a_time: expected True or False"),
}
SAID = {
    "import-error": "ModuleNotFoundError",
    "syntax-error": "SyntaxError",
    "raises": "the factory fell over",
    "wrong-type": "gave dict",
    "other-name": "declares the framework 'other'",
    "bad-name": "a name of lower-case letters",
}
for _kind, (_body, _said) in BAD_FIELDS.items():
    BODIES[_kind], SAID[_kind] = _body, _said


@pytest.fixture
def broken(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[str]:
    """A module ``broken_adapter_<kind>`` registered as the framework 'broken'."""
    kind = request.param
    module = f"broken_adapter_{kind.replace('-', '_')}"
    (tmp_path / f"{module}.py").write_text(BODIES[kind], encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    ADAPTERS.register("broken", f"{module}:adapter", origin=ORIGIN)
    try:
        yield kind
    finally:
        ADAPTERS.unregister("broken")
        sys.path.remove(str(tmp_path))
        sys.modules.pop(module, None)


@pytest.mark.parametrize("broken", list(BODIES), indirect=True)
def test_an_adapter_that_does_not_load_is_named_with_its_entry_point(broken: str) -> None:
    with pytest.raises(RegistryError) as caught:
        adapter("broken")
    said = str(caught.value)
    assert "framework adapter 'broken'" in said and ORIGIN in said, said
    assert "broken_adapter_" in said and SAID[broken] in said, said
    assert "broken" in framework_names()
    assert "broken" not in [a.name for a in adapters()]  # the others still load
    assert list(unloadable()) == ["broken"]


def _site(tmp_path: Path, module_body: str) -> Path:
    """A site directory with an installed distribution registering 'mygraph' as an adapter
    whose module ``module_body`` is."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "broken_mygraph.py").write_text(module_body, encoding="utf-8")
    dist = site / "broken_adapter-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-adapter\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        f"[{ENTRY_POINT_GROUP}]\nmygraph = broken_mygraph:adapter\n"
    )
    return site


def _root(tmp_path: Path) -> Path:
    """The shipped data with the example adapter's candidate matrix beside it."""
    root = tmp_path / "my-root"
    for name in ("cells", "tasks", "mappings"):
        shutil.copytree(REPO / name, root / name)
    matrix = REPO / "examples" / "sabot-adapter-mygraph" / "matrix"
    shutil.copy(matrix / "mygraph.yaml", root / "cells")
    shutil.copy(matrix / "seeds" / "mygraph.json", root / "cells" / "seeds")
    return root


def _run(tmp_path: Path, site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO)])}
    env.pop("PYTEST_XDIST_WORKER", None)
    return subprocess.run(args, capture_output=True, text=True, timeout=600, env=env,
                          cwd=tmp_path, check=False)


@pytest.mark.slow
def test_a_wave_that_runs_a_broken_adapter_is_refused_and_another_wave_runs(
    tmp_path: Path,
) -> None:
    site = _site(tmp_path, "import not_a_module_anywhere\n")
    root = _root(tmp_path)
    pytest_cmd = (sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist",
                  f"--rootdir={tmp_path}")
    refused = _run(tmp_path, site, *pytest_cmd, "--sabot-wave=mygraph",
                   f"--sabot-root={root}", f"--sabot-out={tmp_path / 'out-mine'}")
    text = refused.stdout + refused.stderr
    assert refused.returncode == 4, text
    assert "framework adapter 'mygraph'" in text and "entry point of broken-adapter" in text
    assert "ModuleNotFoundError" in text and "nothing was run" in text
    assert "INTERNALERROR" not in text and "Traceback" not in text
    assert not (tmp_path / "out-mine").exists()

    ran = _run(tmp_path, site, *pytest_cmd, "--sabot-wave=1", f"--sabot-root={root}",
               f"--sabot-out={tmp_path / 'out-1'}",
               "-k", "langgraph and default and baseline and T1 and s11")
    text = ran.stdout + ran.stderr
    assert ran.returncode == 0, text
    assert "framework adapter 'mygraph'" in text and "wave 1 does not run mygraph" in text
    assert (tmp_path / "out-1" / "results.json").is_file()

    checked = _run(tmp_path, site, sys.executable, "-m", "pytest_sabot.commands.cli",
                   "validate", str(root))
    assert checked.returncode == 2, checked.stdout + checked.stderr
    assert "adapter mygraph: framework adapter 'mygraph'" in checked.stdout
    assert "adapter langgraph: ok (run pytest_sabot.adapters.langgraph.pipeline:run)" in \
        checked.stdout


@pytest.mark.slow
def test_validate_imports_each_installed_pipelines_run(tmp_path: Path) -> None:
    body = (
        "from pytest_sabot.core.frameworks import FrameworkAdapter\n"
        "def adapter():\n"
        "    return FrameworkAdapter(name='mygraph', run='broken_mygraph:runn')\n"
        "def run(ctx):\n    pass\n"
    )
    site = _site(tmp_path, body)
    checked = _run(tmp_path, site, sys.executable, "-m", "pytest_sabot.commands.cli",
                   "validate", str(_root(tmp_path)))
    assert checked.returncode == 2, checked.stdout + checked.stderr
    assert "adapter mygraph: " in checked.stdout
    assert "broken_mygraph has no attribute 'runn'" in checked.stdout


@pytest.mark.slow
@pytest.mark.parametrize("body", ["def adapter():\n    raise RuntimeError('boom ' + KEY)\n",
                                  "def adapter(:\n"], ids=["factory-raises", "syntax-error"])
def test_a_local_adapter_that_does_not_load_is_a_usage_error_without_the_key(
    tmp_path: Path, body: str
) -> None:
    """--sabot-adapter: a factory that raises, or a module that does not compile, is a usage
    error naming the option (exit 4, no traceback), and the provider key it holds is
    scrubbed from what is printed."""
    key = "sk-test-broken-adapter-0123456789"
    site = tmp_path / "site"
    site.mkdir()
    (site / "local_broken.py").write_text(f"KEY = {key!r}\n" + body, encoding="utf-8")
    env_key = {"OPENAI_API_KEY": key}
    env = {**os.environ, **env_key,
           "PYTHONPATH": os.pathsep.join([str(site), str(REPO)])}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist",
         f"--rootdir={tmp_path}", "--sabot-wave=1", "--sabot-adapter=local_broken:adapter",
         f"--sabot-out={tmp_path / 'out'}"],
        capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path, check=False)
    text = done.stdout + done.stderr
    assert done.returncode == 4, text
    assert "--sabot-adapter=local_broken:adapter" in text and "INTERNALERROR" not in text
    assert key not in text
