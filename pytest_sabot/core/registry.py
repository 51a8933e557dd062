"""The one registry style: a name maps to a factory that is imported on first use.

Model backends of the gateway, judge backends and framework adapters are all registered
this way (inspect-ai registers its model providers alike). An entry names its factory as
``"module:attribute"``, so registering imports nothing; the module is imported when the
entry is first loaded, after the optional dependency it declares has been checked, and a
missing one is a :class:`NotInstalled` error naming the extra that installs it.

A registry may also read an entry-point group (``[project.entry-points."<group>"]`` in a
distribution's metadata): that is how framework adapters are discovered, the shipped ones
exactly like a third party's. When the group holds no entry of pytest-sabot's own
distribution (a source checkout whose installed metadata predates the group), the entries
the checkout itself declares stand in for them, so a checkout works without being
reinstalled.
"""

from __future__ import annotations

import importlib
import importlib.util
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Generic, TypeVar

__all__ = [
    "DISTRIBUTION",
    "Entry",
    "NotInstalled",
    "Registry",
    "RegistryError",
    "importable",
    "load_target",
]

F = TypeVar("F")

DISTRIBUTION = "pytest-sabot"


class RegistryError(ValueError):
    """An unknown name, a target that cannot be loaded, or two targets for one name."""


class NotInstalled(RegistryError):
    """An entry's optional dependency is missing; the message says how to install it."""


def importable(module: str) -> bool:
    """Whether a top-level module can be imported, without importing it."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def load_target(target: str) -> Any:
    """The object a ``"module:attribute"`` target names (the module is imported now; a
    module that cannot be imported raises its ImportError)."""
    module_name, sep, attribute = target.partition(":")
    if not sep or not module_name or not attribute:
        raise RegistryError(f"{target!r}: expected 'module:attribute'")
    found: Any = importlib.import_module(module_name)  # an ImportError names the module
    for part in attribute.split("."):
        if not hasattr(found, part):
            raise RegistryError(f"{target!r}: {module_name} has no attribute {attribute!r}")
        found = getattr(found, part)
    return found


@dataclass(frozen=True)
class Entry:
    """One registered name: its factory (an object, or ``"module:attribute"`` imported on
    first use), the top-level modules of its optional dependency and the extra that
    installs them, and where the entry came from."""

    name: str
    target: str | Any
    requires: tuple[str, ...] = ()
    extra: str | None = None
    origin: str = "built-in"

    def missing(self, what: str) -> str | None:
        """None when the dependency is importable, else what is missing and how to install
        it (nothing is imported)."""
        absent = [m for m in self.requires if not importable(m)]
        if not absent:
            return None
        how = (
            f"install the '{self.extra}' extra: pip install 'pytest-sabot[{self.extra}]'"
            if self.extra
            else "install pytest-sabot with its dependencies: pip install pytest-sabot"
        )
        verb = "is" if len(absent) == 1 else "are"
        needs = ", ".join(absent)
        return f"the {self.name} {what} needs {needs}, which {verb} not installed; {how}"


class Registry(Generic[F]):
    """Named factories of one kind, imported on first use.

    ``builtins`` are the shipped entries (name -> ``"module:attribute"``, or a function
    returning them when first needed); with ``group`` they are what pytest-sabot's own
    distribution declares in the group, and stand in for its entry points when the
    installed metadata declares none. ``first`` orders the names that lead ``names()``;
    the others follow in name order.
    """

    def __init__(
        self,
        what: str,
        builtins: Mapping[str, str | Entry] | Callable[[], Mapping[str, str]] | None = None,
        *,
        group: str | None = None,
        first: Sequence[str] = (),
        origin: str = "built-in",
    ) -> None:
        self.what = what
        self.group = group
        self._given = builtins
        self._first = tuple(first)
        self._origin = origin
        self._entries: dict[str, Entry] | None = None
        self._loaded: dict[str, F] = {}
        self._lock = threading.RLock()

    # ------------------------------------------------------------------ discovery

    def _builtins(self) -> dict[str, Entry]:
        given = self._given() if callable(self._given) else (self._given or {})
        return {
            name: target if isinstance(target, Entry) else Entry(name, target, origin=self._origin)
            for name, target in given.items()
        }

    def _discover(self) -> dict[str, Entry]:
        if self.group is None:
            return self._ordered(self._builtins())
        found: dict[str, Entry] = {}
        own = False
        for point in sorted(metadata.entry_points(group=self.group), key=lambda p: p.name):
            dist = point.dist.name if point.dist is not None else "unknown distribution"
            own = own or _same_distribution(dist, DISTRIBUTION)
            entry = Entry(point.name, point.value, origin=f"entry point of {dist}")
            self._add(found, entry)
        if not own:  # a source checkout: the shipped entries stand in for the metadata's
            for entry in self._builtins().values():
                self._add(found, entry)
        return self._ordered(found)

    def _ordered(self, found: dict[str, Entry]) -> dict[str, Entry]:
        first = [n for n in self._first if n in found]
        rest = sorted(n for n in found if n not in self._first) if self._first else [
            n for n in found if n not in first
        ]
        return {name: found[name] for name in [*first, *rest]}

    def _add(self, found: dict[str, Entry], entry: Entry) -> None:
        known = found.get(entry.name)
        if known is not None and known.target != entry.target:
            raise RegistryError(
                f"{self.what} {entry.name!r} is registered twice: {known.target} "
                f"({known.origin}) and {entry.target} ({entry.origin})"
            )
        found[entry.name] = entry

    def _all(self) -> dict[str, Entry]:
        with self._lock:
            if self._entries is None:
                self._entries = self._discover()
            return self._entries

    # ------------------------------------------------------------------ public

    def register(
        self,
        name: str,
        target: str | Any,
        *,
        requires: Iterable[str] = (),
        extra: str | None = None,
        origin: str = "registered",
    ) -> Entry:
        """Add an entry (a name may be registered again only with the same target)."""
        entry = Entry(name, target, tuple(requires), extra, origin)
        with self._lock:
            entries = self._all()
            self._add(entries, entry)
            self._loaded.pop(name, None)
        return entry

    def unregister(self, name: str) -> None:
        """Forget an entry registered for a while (a session's local adapter)."""
        with self._lock:
            self._all().pop(name, None)
            self._loaded.pop(name, None)

    def names(self) -> tuple[str, ...]:
        """Every registered name: the built-in ones in their order, then the others."""
        return tuple(self._all())

    def __contains__(self, name: object) -> bool:
        return name in self._all()

    def entry(self, name: str) -> Entry:
        try:
            return self._all()[name]
        except KeyError:
            known = ", ".join(repr(n) for n in self.names()) or "none"
            raise RegistryError(f"unknown {self.what} {name!r} (registered: {known})") from None

    def missing(self, name: str) -> str | None:
        """What the entry's optional dependency lacks, in words (None: nothing)."""
        return self.entry(name).missing(self.what)

    def load(self, name: str) -> F:
        """The entry's factory, imported now if it was not yet; NotInstalled when its
        optional dependency is missing."""
        with self._lock:
            if name in self._loaded:
                return self._loaded[name]
            entry = self.entry(name)
            problem = entry.missing(self.what)
            if problem is not None:
                raise NotInstalled(problem)
            target = entry.target
            factory: F = load_target(target) if isinstance(target, str) else target
            self._loaded[name] = factory
            return factory

    def reset(self) -> None:
        """Read the entry points again on next use (and forget what was registered)."""
        with self._lock:
            self._entries = None
            self._loaded.clear()


def _same_distribution(a: str, b: str) -> bool:
    def norm(name: str) -> str:
        return name.lower().replace("_", "-").replace(".", "-")

    return norm(a) == norm(b)

