"""One registry style for gateway backends, judge backends and framework adapters (issue 11,
issue 14): a name maps to a factory imported on first use, with its optional dependency
checked first; adapters are discovered through the ``pytest_sabot.adapters`` entry points,
the shipped ones exactly as a third party's, and a source checkout whose installed metadata
predates the group falls back to the shipped ones."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from pytest_sabot.core.frameworks import (
    CHECKOUT_ORIGIN,
    ENTRY_POINT_GROUP,
    FrameworkAdapter,
    FrameworkNotInstalled,
    adapter,
    checkout_adapters,
    framework_names,
    installed_versions,
    off_pin,
)
from pytest_sabot.core.registry import NotInstalled, Registry, RegistryError
from pytest_sabot.gateway.backends import BACKENDS
from pytest_sabot.judge import JUDGES, JudgeBackendError, make_backend

REPO = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------- the style


def _module(tmp_path: Path, name: str, body: str) -> None:
    (tmp_path / f"{name}.py").write_text(body, encoding="utf-8")


def test_an_entry_is_imported_on_first_use_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _module(tmp_path, "lazy_factory_mod", "LOADED = True\ndef make():\n    return 'made'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry: Registry[object] = Registry("widget", {"lazy": "lazy_factory_mod:make"})
    assert registry.names() == ("lazy",)
    assert "lazy_factory_mod" not in sys.modules
    factory = registry.load("lazy")
    assert "lazy_factory_mod" in sys.modules
    assert factory() == "made"  # type: ignore[operator]
    assert registry.load("lazy") is factory


def test_a_missing_optional_dependency_names_the_extra_before_any_import() -> None:
    registry: Registry[object] = Registry("widget")
    registry.register("fancy", "no_such_module_xyz:thing", requires=["no_such_module_xyz"],
                      extra="fancy")
    assert "pip install 'pytest-sabot[fancy]'" in (registry.missing("fancy") or "")
    with pytest.raises(NotInstalled, match=r"no_such_module_xyz, which is not installed"):
        registry.load("fancy")


def test_an_unknown_name_lists_the_registered_ones() -> None:
    with pytest.raises(RegistryError, match=r"unknown model backend 'vllm' .*'sim', 'openai'"):
        BACKENDS.load("vllm")


def test_one_name_cannot_be_registered_for_two_factories() -> None:
    registry: Registry[object] = Registry("widget", {"a": "x:one"})
    with pytest.raises(RegistryError, match="registered twice"):
        registry.register("a", "x:two")
    registry.register("a", "x:one")  # the same target again is no conflict


# --------------------------------------------------------------------------- the three uses


def test_gateway_backends_are_one_registry() -> None:
    assert BACKENDS.names() == ("sim", "openai", "local", "replay")
    assert all(isinstance(BACKENDS.entry(n).target, str) for n in BACKENDS.names())


def test_judge_backends_are_one_registry() -> None:
    assert JUDGES.names() == ("sim", "claude-cli", "openai")
    judge, note = make_backend("sim", pipeline_model="sim:realistic", gateway_url=None)
    assert judge.fixture and note is None
    with pytest.raises(JudgeBackendError, match="'sim', 'claude-cli\\[:model\\]'"):
        make_backend("gemini:pro", pipeline_model="sim:realistic", gateway_url=None)
    with pytest.raises(JudgeBackendError, match="same lineage"):
        make_backend("openai:gpt-5.6-luna", pipeline_model="openai:gpt-5.6-terra",
                     gateway_url="http://127.0.0.1:1/x")
    with pytest.raises(JudgeBackendError, match="needs the session's gateway"):
        make_backend("openai:gpt-5.6-luna", pipeline_model="sim", gateway_url=None)


@pytest.mark.slow
def test_a_keyless_gateway_never_builds_the_live_upstream() -> None:
    code = (
        "import sys\n"
        "from pytest_sabot.gateway import GatewayClient, GatewaySettings, start_gateway\n"
        "with start_gateway(GatewaySettings()) as gw:\n"
        "    client = GatewayClient(str(gw.url))\n"
        "    client.register_run('r~a1', 'langgraph-default-baseline-T1-s11', 11, 'sim')\n"
        "    client.close_run('r~a1')\n"
        "print('pytest_sabot.gateway.backends.openai_upstream' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.stdout.strip() == "False"


def test_the_shipped_adapters_register_through_the_entry_point_group() -> None:
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())
    points = declared["project"]["entry-points"][ENTRY_POINT_GROUP]
    assert points == {
        name: f"pytest_sabot.adapters.{name}:adapter"
        for name in ("langgraph", "crewai", "autogen", "agent_framework")
    }
    # A source checkout whose installed metadata predates the group reads the same lines.
    assert checkout_adapters() == points
    # The standard's frameworks lead, the others follow in name order.
    assert framework_names()[:4] == ("langgraph", "crewai", "autogen", "agent_framework")


def test_each_adapter_declares_everything_framework_specific() -> None:
    for name in ("langgraph", "crewai", "autogen", "agent_framework"):
        declared = adapter(name)
        assert declared.name == name
        assert declared.packages and declared.modules and declared.cost_per_run
        assert set(declared.cost_per_run) == {"default", "guardrail"}
        assert declared.mapping_path(REPO) == REPO / "mappings" / f"{name}.yaml"
    assert [n for n in framework_names() if adapter(n).flags_head("guardrail")] == [
        "autogen", "agent_framework"
    ]
    assert adapter("agent_framework").extra == "agent-framework"


def test_versions_and_pins_come_from_the_adapters() -> None:
    versions = installed_versions()
    assert list(versions) == [
        "langgraph", "langchain-openai", "crewai", "autogen-agentchat", "autogen-core",
        "autogen-ext", "agent-framework-core", "agent-framework-openai",
        "agent-framework-orchestrations", "openai",
    ]
    odd = dict(versions, crewai="9.9.9", **{"agent-framework-core": "not installed"})
    assert off_pin(odd) == {"crewai": "installed 9.9.9, pinned 1.15.5"}
    assert off_pin(dict(versions, langgraph="not installed")) == {
        "langgraph": "not installed, pinned 1.2.9"
    }


def test_issue22_17_a_standard_framework_that_is_not_installed_reads_not_installed() -> None:
    versions = dict(installed_versions(), crewai="not installed")
    assert off_pin(versions)["crewai"] == "not installed, pinned 1.15.5"
    assert "installed not installed" not in " ".join(off_pin(versions).values())


def test_an_adapter_whose_framework_is_not_installed_names_its_extra() -> None:
    blocked = FrameworkAdapter(name="ghost", run="ghost_pipeline:run", modules=("ghost_fw",),
                               extra="ghost")
    with pytest.raises(FrameworkNotInstalled, match=r"pip install 'pytest-sabot\[ghost\]'"):
        blocked.load_run()


# --------------------------------------------------------------------------- discovery

_TOY = '''
from pytest_sabot.core.frameworks import FrameworkAdapter

def adapter():
    return FrameworkAdapter(name="toy", run="toy_adapter:run", packages={"toy-adapter": "1.0"})

def run(ctx):
    raise RuntimeError("not run here")
'''


def _site(tmp_path: Path, own_points: dict[str, str] | None) -> Path:
    """A site directory holding a third party's adapter distribution and a pytest-sabot
    distribution's metadata (declaring ``own_points`` in the group, or no group at all)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "toy_adapter.py").write_text(_TOY, encoding="utf-8")
    toy = site / "toy_adapter-1.0.dist-info"
    toy.mkdir()
    (toy / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-adapter\nVersion: 1.0\n")
    (toy / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\ntoy = toy_adapter:adapter\n")
    own = site / "pytest_sabot-0.1.0.dist-info"
    own.mkdir()
    (own / "METADATA").write_text("Metadata-Version: 2.1\nName: pytest-sabot\nVersion: 0.1.0\n")
    lines = ["[pytest11]", "sabot = pytest_sabot.plugin"]
    if own_points is not None:
        lines += [f"[{ENTRY_POINT_GROUP}]", *(f"{k} = {v}" for k, v in own_points.items())]
    (own / "entry_points.txt").write_text("\n".join(lines) + "\n")
    return site


def _discovered(site: Path) -> dict[str, str]:
    code = (
        "import json\n"
        "from pytest_sabot.core.frameworks import ADAPTERS, adapter\n"
        "print(json.dumps({n: ADAPTERS.entry(n).origin for n in ADAPTERS.names()}))\n"
        "assert adapter('toy').packages == {'toy-adapter': '1.0'}\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO)])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=120, env=env)
    found: dict[str, str] = json.loads(done.stdout)
    return found


def test_installed_adapters_are_found_through_their_entry_points(tmp_path: Path) -> None:
    """pytest-sabot's own metadata declares the group: it is read as it is (here without
    agent_framework, to show no fallback fills it in), beside a third party's adapter."""
    shipped = {k: v for k, v in checkout_adapters().items() if k != "agent_framework"}
    found = _discovered(_site(tmp_path, shipped))
    assert list(found) == ["langgraph", "crewai", "autogen", "toy"]
    assert set(found.values()) == {
        "entry point of pytest-sabot", "entry point of toy-adapter"
    }


def test_a_source_checkout_with_older_metadata_falls_back_to_the_shipped_adapters(
    tmp_path: Path,
) -> None:
    found = _discovered(_site(tmp_path, None))
    assert list(found) == ["langgraph", "crewai", "autogen", "agent_framework", "toy"]
    assert found["langgraph"] == CHECKOUT_ORIGIN
    assert found["toy"] == "entry point of toy-adapter"
