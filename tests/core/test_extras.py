"""Frameworks as extras (SPEC.md I84): each shipped adapter names the pytest-sabot extra that
installs exactly its pinned packages, [all] installs every one, and a missing framework is
refused before anything runs with the extra to install. A missing distribution is
simulated through the registry (an entry whose declaration needs a module that no
distribution provides), never by uninstalling anything."""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from pytest_sabot.core.frameworks import (
    ADAPTERS,
    STANDARD_FRAMEWORKS,
    FrameworkAdapter,
    FrameworkNotInstalled,
    adapter,
    forget_local,
    require_frameworks,
)
from pytest_sabot.core.models.cells import Cell
from pytest_sabot.session.preflight import check_frameworks

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
SHIPPED = (*STANDARD_FRAMEWORKS, "agent_framework")


def _project() -> dict[str, object]:
    project: dict[str, object] = tomllib.loads(PYPROJECT.read_text())["project"]
    return project


def _extras() -> dict[str, list[Requirement]]:
    extras = _project()["optional-dependencies"]
    assert isinstance(extras, dict)
    return {name: [Requirement(r) for r in reqs] for name, reqs in extras.items()}


def test_I84_each_shipped_adapter_names_the_extra_that_installs_its_pins() -> None:
    extras = _extras()
    for name in SHIPPED:
        declared = adapter(name)
        assert declared.extra is not None, name
        pins = {r.name: str(r.specifier) for r in extras[declared.extra]}
        assert pins == {p: f"=={v}" for p, v in declared.packages.items()}, name


def test_I84_the_core_installs_no_framework_and_all_installs_every_one() -> None:
    extras = _extras()
    core = {Requirement(r).name for r in _project()["dependencies"]}  # type: ignore[attr-defined]
    for name in SHIPPED:
        assert not core & set(adapter(name).packages), name
    (everything,) = extras["all"]
    assert everything.name == "pytest-sabot"
    assert everything.extras == {adapter(n).extra for n in SHIPPED}
    assert any(r.name == "pytest-sabot" and "all" in r.extras for r in extras["dev"])


@pytest.mark.parametrize("framework", SHIPPED)
def test_I84_a_missing_framework_is_refused_naming_its_extra(framework: str) -> None:
    shipped = adapter(framework)
    absent = f"{framework}_absent"

    def factory() -> FrameworkAdapter:  # the shipped declaration, its distribution gone
        return dataclasses.replace(shipped, name=absent,
                                   modules=(*shipped.modules, "sabot_no_such_distribution"))

    ADAPTERS.register(absent, factory, origin="--sabot-adapter")  # as a session's own
    try:
        with pytest.raises(FrameworkNotInstalled) as raised:
            require_frameworks([absent])
        text = str(raised.value)
        assert "sabot_no_such_distribution" in text and "not installed" in text
        assert f"pip install 'pytest-sabot[{shipped.extra}]'" in text
        cell = Cell(wave=101, framework=absent, config="default", operator=None, task="T1",
                    seed=11)
        with pytest.raises(pytest.UsageError) as usage:
            check_frameworks([cell])
        assert f"pytest-sabot[{shipped.extra}]" in str(usage.value)
    finally:
        forget_local(absent)
