"""Framework adapters: what each one declares, and the registry they are found in.

An adapter is a package. Its light top module holds a factory that returns a
:class:`FrameworkAdapter`: everything pytest-sabot knows of the framework, declared by the
adapter itself (the framework's name, its packages and their pins, the modules its
pipeline imports and the extra that installs them, the warnings a wave quiets, a cost
estimate per run for ``sabot plan``, its mapping file, and which of its configurations end
in a Magentic-style artifact whose first line is the FLAGS line). The pipeline itself lives
in a module named by ``run`` and is imported only when the framework's first cell runs.

Adapters are found through the entry-point group ``pytest_sabot.adapters``::

    [project.entry-points."pytest_sabot.adapters"]
    langgraph = "pytest_sabot.adapters.langgraph:adapter"

The shipped LangGraph, CrewAI, AutoGen and agent-framework adapters register exactly that
way (pyproject.toml; a source checkout whose installed metadata predates the group reads
those lines from its own pyproject.toml); a third party's package does the same, and
``--sabot-adapter module:factory`` adds a local one for a session. Adding a framework is
one adapter package plus one mapping file (and its entry-point line).
"""

from __future__ import annotations

import functools
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_sabot.core.registry import (
    DISTRIBUTION,
    NotInstalled,
    Registry,
    RegistryError,
    importable,
    load_target,
)

if TYPE_CHECKING:
    from pytest_sabot.core.context import RunContext

__all__ = [
    "ENTRY_POINT_GROUP",
    "STANDARD_FRAMEWORKS",
    "AdapterRun",
    "FrameworkAdapter",
    "FrameworkNotInstalled",
    "adapter",
    "adapters",
    "framework_names",
    "installed_versions",
    "off_pin",
    "register_local",
    "register_recorded",
    "require_frameworks",
    "unloadable",
]

ENTRY_POINT_GROUP = "pytest_sabot.adapters"
STANDARD_FRAMEWORKS = ("langgraph", "crewai", "autogen")
"""The frameworks of the standard (section 8). Their packages must be at their pins; any
other framework runs only in a candidate matrix and is off-pin only when installed at
another version than the one its adapter declares."""
ALSO_REPORTED = ("openai",)
"""Packages reported beside the frameworks' own (every adapter talks through the OpenAI
SDK)."""

CHECKOUT_ORIGIN = "pyproject.toml of the source checkout"

AdapterRun = Callable[["RunContext"], None]
CostPerRun = tuple[float, float, float]
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


class FrameworkNotInstalled(NotInstalled):
    """A framework's packages are not installed; the message says how to install them."""


@dataclass(frozen=True)
class FrameworkAdapter:
    """Everything framework-specific, declared by the framework's adapter."""

    name: str
    """The framework's name in cells, traces, results and mappings (e.g. 'langgraph')."""
    run: str
    """``"module:function"`` of the pipeline, ``run(ctx: RunContext) -> None``; imported
    when the framework's first cell runs."""
    packages: Mapping[str, str] = field(default_factory=dict)
    """Distribution -> the version the adapter is built and pinned against."""
    modules: tuple[str, ...] = ()
    """Top-level modules the pipeline imports, checked (not imported) before anything runs."""
    extra: str | None = None
    """The pytest-sabot extra that installs them (a shipped framework's, e.g. 'crewai')."""
    install: str | None = None
    """What to ``pip install`` for them when they are no pytest-sabot extra: a third party's
    adapter names its own distribution (e.g. 'sabot-adapter-mygraph'). With neither, the
    message says to install pytest-sabot with its dependencies."""
    mapping: str = ""
    """The mapping file: a file name under ``<root>/mappings/`` (default ``<name>.yaml``)
    or an absolute path (a mapping shipped inside the adapter's own package)."""
    warning_modules: tuple[str, ...] = ()
    """Regular expressions of modules whose deprecation warnings a wave quiets."""
    cost_per_run: Mapping[str, CostPerRun] = field(default_factory=dict)
    """Config -> (model calls, prompt tokens per call, completion tokens per call) of one
    run: ``sabot plan``'s estimate when no recorded run is given."""
    flags_head_configs: frozenset[str] = frozenset()
    """Configurations whose final artifact carries the FLAGS line as its first line (a
    Magentic-style team writes the artifact itself, standard section 10.2)."""
    one_run_at_a_time: bool = False
    """The pipeline holds process-wide state for the length of a run (CrewAI points the
    environment into the run's directory): a process never runs two of its cells at once
    (``--sabot-concurrency`` fills the room with other frameworks' cells)."""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise RegistryError(
                f"framework adapter {self.name!r}: a name of lower-case letters, digits and "
                "underscores, starting with a letter"
            )
        if not isinstance(self.run, str) or ":" not in self.run:
            raise RegistryError(f"framework adapter {self.name!r}: run must be 'module:function'")
        # A list where a tuple is declared is taken as the tuple; anything else is refused
        # here, by field, before a session opens its output (never an INTERNALERROR later).
        for name in ("modules", "warning_modules"):
            object.__setattr__(self, name, self._texts(name, getattr(self, name)))
        object.__setattr__(self, "flags_head_configs",
                           frozenset(self._texts("flags_head_configs", self.flags_head_configs)))
        problem = (self._packages_problem() or self._optional_text("extra")
                   or self._optional_text("install") or self._mapping_problem()
                   or self._patterns_problem() or self._cost_problem())
        if problem is None and not isinstance(self.one_run_at_a_time, bool):
            problem = f"one_run_at_a_time: expected True or False, got {self.one_run_at_a_time!r}"
        if problem is not None:
            raise RegistryError(f"framework adapter {self.name!r}: {problem}")

    def _texts(self, name: str, value: Any) -> tuple[str, ...]:
        if isinstance(value, str) or not isinstance(value, tuple | list | set | frozenset):
            raise RegistryError(
                f"framework adapter {self.name!r}: {name}: expected a tuple of strings, got "
                f"{value!r}"
            )
        bad = [v for v in value if not isinstance(v, str) or not v]
        if bad:
            raise RegistryError(
                f"framework adapter {self.name!r}: {name}: expected non-empty strings, got "
                f"{bad[0]!r}"
            )
        return tuple(sorted(value)) if isinstance(value, set | frozenset) else tuple(value)

    def _packages_problem(self) -> str | None:
        from packaging.version import InvalidVersion, Version

        if not isinstance(self.packages, Mapping):
            return f"packages: expected a mapping of distribution -> version, got {self.packages!r}"
        for dist, pin in self.packages.items():
            if not isinstance(dist, str) or not dist:
                return f"packages: expected distribution names, got {dist!r}"
            if not isinstance(pin, str):
                return f"packages[{dist!r}]: expected a version string such as '1.2.9', got {pin!r}"
            try:
                Version(pin)
            except InvalidVersion:
                return f"packages[{dist!r}]: expected a version such as '1.2.9', got {pin!r}"
        return None

    def _optional_text(self, name: str) -> str | None:
        value = getattr(self, name)
        if value is None or (isinstance(value, str) and value):
            return None
        return f"{name}: expected None or a non-empty string, got {value!r}"

    def _mapping_problem(self) -> str | None:
        if isinstance(self.mapping, str):
            return None
        return f"mapping: expected a file name or an absolute path, got {self.mapping!r}"

    def _patterns_problem(self) -> str | None:
        for pattern in self.warning_modules:
            try:
                re.compile(pattern)
            except re.error as exc:
                return (f"warning_modules: {pattern!r} is not a regular expression ({exc}); "
                        "expected a pattern of module names such as 'crewai\\..*'")
        return None

    def _cost_problem(self) -> str | None:
        if not isinstance(self.cost_per_run, Mapping):
            return (f"cost_per_run: expected a mapping of config -> (calls, prompt tokens, "
                    f"completion tokens), got {self.cost_per_run!r}")
        for config, cost in self.cost_per_run.items():
            numbers = isinstance(cost, tuple | list) and len(cost) == 3 and all(
                isinstance(n, int | float) and not isinstance(n, bool) and n >= 0 for n in cost)
            if not isinstance(config, str) or not numbers:
                return (f"cost_per_run[{config!r}]: expected (model calls, prompt tokens per "
                        f"call, completion tokens per call), three numbers >= 0, got {cost!r}")
        return None

    def missing(self) -> str | None:
        """None when the pipeline's modules can be imported, else what is missing and how
        to install it (nothing is imported)."""
        absent = [m for m in self.modules if not importable(m)]
        if not absent:
            return None
        return (
            f"the {self.name} pipeline needs {', '.join(absent)}, which "
            f"{'is' if len(absent) == 1 else 'are'} not installed; {self.how_to_install()}"
        )

    def how_to_install(self) -> str:
        """The words that say how to install the pipeline's packages."""
        if self.extra:
            return f"install the '{self.extra}' extra: pip install 'pytest-sabot[{self.extra}]'"
        if self.install:
            return f"install it: pip install '{self.install}'"
        return "install pytest-sabot with its dependencies: pip install pytest-sabot"

    def load_run(self) -> AdapterRun:
        """The pipeline's ``run(ctx)``, importing its module now."""
        problem = self.missing()
        if problem is not None:
            raise FrameworkNotInstalled(problem)
        found = load_target(self.run)
        if not callable(found):
            raise RegistryError(f"framework adapter {self.name!r}: {self.run} is not callable")
        run: AdapterRun = found
        return run

    def flags_head(self, config: str) -> bool:
        """Whether a run of this configuration ends in an artifact whose first line is the
        FLAGS line."""
        return config in self.flags_head_configs

    def mapping_path(self, root: Path) -> Path:
        """The mapping file, under ``root`` unless the adapter ships its own."""
        name = self.mapping or f"{self.name}.yaml"
        given = Path(name)
        return given if given.is_absolute() else Path(root) / "mappings" / name


def checkout_adapters() -> dict[str, str]:
    """The group as the source checkout this package was imported from declares it in its
    pyproject.toml: the shipped adapters, when the installed metadata predates the group
    (nothing outside a checkout of pytest-sabot)."""
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    try:
        project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
    except (OSError, tomllib.TOMLDecodeError):
        return {}
    if project.get("name") != DISTRIBUTION:
        return {}
    declared = project.get("entry-points", {}).get(ENTRY_POINT_GROUP, {})
    return {str(name): str(target) for name, target in declared.items()}


ADAPTERS: Registry[Callable[[], FrameworkAdapter]] = Registry(
    "framework adapter",
    checkout_adapters,
    group=ENTRY_POINT_GROUP,
    first=STANDARD_FRAMEWORKS,  # the standard's frameworks lead, the others in name order
    origin=CHECKOUT_ORIGIN,
)
_declared: dict[str, FrameworkAdapter] = {}


def adapter(name: str) -> FrameworkAdapter:
    """The declaration of a registered framework (its adapter's light module is imported
    on first use; the framework itself is not). An adapter that does not load (its module
    fails to import, its factory raises or returns something else) is a RegistryError
    naming the entry, where it was registered and what was expected."""
    if name not in _declared:
        entry = ADAPTERS.entry(name)  # an unknown name says which are registered
        where = f"{name!r} ({entry.target}, {entry.origin})"
        expected = "expected 'module:factory' naming a function that returns a FrameworkAdapter"
        try:
            factory = ADAPTERS.load(name)
            declared = factory() if callable(factory) else factory
        except NotInstalled:
            raise
        except Exception as exc:  # third-party code: whatever it raises is named
            raise RegistryError(
                f"framework adapter {where} could not be loaded: {type(exc).__name__}: "
                f"{exc}; {expected}"
            ) from exc
        if not isinstance(declared, FrameworkAdapter):
            raise RegistryError(
                f"framework adapter {where} gave {type(declared).__name__}; {expected}"
            )
        if declared.name != name:
            raise RegistryError(
                f"framework adapter {where} declares the framework {declared.name!r}; "
                f"expected {name!r}, the name it is registered under"
            )
        _declared[name] = declared
    return _declared[name]


def framework_names() -> tuple[str, ...]:
    """Every registered framework: the shipped ones first, in their order."""
    return ADAPTERS.names()


def _loading() -> tuple[list[FrameworkAdapter], dict[str, str]]:
    """Every registered framework's declaration that loads, and why each other one does
    not, in registry order."""
    loaded: list[FrameworkAdapter] = []
    problems: dict[str, str] = {}
    for name in framework_names():
        try:
            loaded.append(adapter(name))
        except RegistryError as exc:
            problems[name] = str(exc)
    return loaded, problems


def adapters() -> list[FrameworkAdapter]:
    """Every registered framework's declaration that loads, in registry order; one that
    does not is left out here and said by :func:`unloadable` (a wave that runs it is
    refused when its matrix is loaded, by :func:`adapter`)."""
    return _loading()[0]


def unloadable() -> dict[str, str]:
    """Framework -> why its adapter does not load, for every registered one that does not."""
    return _loading()[1]


def register_local(target: str) -> FrameworkAdapter:
    """Register ``module:factory`` (a factory returning a FrameworkAdapter) for this
    process: the ``--sabot-adapter`` option."""
    found: Any = load_target(target)
    try:
        declared = found() if callable(found) else found
    except Exception as exc:  # third-party code: whatever its factory raises is named
        raise RegistryError(
            f"{target}: the factory raised {type(exc).__name__}: {exc}; expected it to return "
            "a FrameworkAdapter"
        ) from exc
    if not isinstance(declared, FrameworkAdapter):
        raise RegistryError(
            f"{target}: expected a FrameworkAdapter (or a factory returning one), got "
            f"{type(declared).__name__}"
        )
    ADAPTERS.register(declared.name, target, origin="--sabot-adapter")
    _declared[declared.name] = declared
    return declared


def register_targets(given: str | list[str] | None) -> str | None:
    """``--sabot-adapter module:factory[,...]`` of a command (validate, replay): register
    each as :func:`register_local` does for a session. The problem, in words, when one
    does not load (None when all did)."""
    targets = given.split(",") if isinstance(given, str) else list(given or [])
    for target in (t.strip() for t in targets if t.strip()):
        try:
            register_local(target)
        except (RegistryError, ImportError, AttributeError, TypeError, ValueError) as exc:
            return f"--sabot-adapter={target}: {exc}"
    return None


RECORDED_ORIGIN = "recorded by session "


def _recorded_run(ctx: RunContext) -> None:
    raise RegistryError(
        f"framework {ctx.cell.framework!r}: only its records are read here (its adapter is "
        "not installed); install the adapter to run it"
    )


def register_recorded(
    name: str, mapping: Path, packages: Mapping[str, str], session: str
) -> bool:
    """Stand in for a framework whose adapter is not importable here, so the records a
    session made with it can be read and rescored: its declaration as the session recorded
    it (its packages' pins, the copy of its mapping kept beside the session's manifest).
    Nothing it declares can run. Returns False (and changes nothing) when the framework is
    registered already: an installed adapter is always the one used."""
    if name in ADAPTERS:
        return False
    declared = FrameworkAdapter(
        name=name,
        run="pytest_sabot.core.frameworks:_recorded_run",
        packages=dict(packages),
        mapping=str(Path(mapping).resolve()),
    )
    ADAPTERS.register(name, lambda: declared, origin=RECORDED_ORIGIN + session)
    _declared[name] = declared
    return True


def forget_recorded(name: str) -> None:
    """Undo :func:`register_recorded` (the records have been read)."""
    if name in ADAPTERS and ADAPTERS.entry(name).origin.startswith(RECORDED_ORIGIN):
        ADAPTERS.unregister(name)
        _declared.pop(name, None)


def forget_local(name: str) -> None:
    """Undo :func:`register_local` (the session that registered it has ended)."""
    if ADAPTERS.entry(name).origin == "--sabot-adapter":
        ADAPTERS.unregister(name)
        _declared.pop(name, None)


def require_frameworks(frameworks: Any) -> None:
    """Raise FrameworkNotInstalled for the first framework whose packages are missing."""
    for name in sorted(set(frameworks)):
        problem = adapter(name).missing()
        if problem is not None:
            raise FrameworkNotInstalled(problem)


def reported_packages() -> tuple[str, ...]:
    """Every package whose installed version results and traces report."""
    names = [p for declared in adapters() for p in declared.packages]
    return (*dict.fromkeys(names), *ALSO_REPORTED)


def installed_versions() -> dict[str, str]:
    """Installed version of every reported package (for off-pin reporting)."""
    return dict(_installed(reported_packages()))


@functools.cache
def _installed(packages: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    found: list[tuple[str, str]] = []
    for name in packages:
        try:
            found.append((name, metadata.version(name)))
        except metadata.PackageNotFoundError:
            found.append((name, "not installed"))
    return tuple(found)


def off_pin(installed: Mapping[str, str]) -> dict[str, str]:
    """Package -> 'installed X, pinned Y' for every package not at its adapter's pin: a
    framework of the standard always, any other framework's only when it is installed (a
    candidate that is not installed cannot have run)."""
    found: dict[str, str] = {}
    for declared in adapters():
        standard = declared.name in STANDARD_FRAMEWORKS
        for name, pin in declared.packages.items():
            version = installed.get(name, "not installed")
            if version == pin or (not standard and version == "not installed"):
                continue
            found[name] = (
                f"not installed, pinned {pin}" if version == "not installed"
                else f"installed {version}, pinned {pin}"
            )
    return found


def warning_modules() -> tuple[str, ...]:
    """The module patterns every registered framework asks a wave to quiet."""
    return tuple(dict.fromkeys(m for declared in adapters() for m in declared.warning_modules))


def cost_per_run() -> dict[str, CostPerRun]:
    """Row ('framework-config') -> the adapter's per-run estimate for ``sabot plan``."""
    return {
        f"{declared.name}-{config}": figures
        for declared in adapters()
        for config, figures in declared.cost_per_run.items()
    }
