"""One wave of the standard, loaded once: its spec and cells, the rule book, the mapping
revision of each framework, the anchor registry and the tasks' private specs.

Everything here is validated at load time, so a malformed file stops a session before
any model call is made.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_sabot.core.frameworks import adapter
from pytest_sabot.core.models.anchors import Anchor, AnchorRegistry
from pytest_sabot.core.models.cells import Cell, WaveSpec
from pytest_sabot.core.models.defects import PublishedDefect
from pytest_sabot.core.models.mapping import MappingRevision, load_mapping
from pytest_sabot.core.models.outside import OutsideRow
from pytest_sabot.core.models.rules import RuleSet, load_rule_book
from pytest_sabot.core.paths import standard_root
from pytest_sabot.matrix.cells import (
    lab_files,
    load_wave,
    load_wave_anchors,
    other_lab_files,
    unrun_operator_specs,
    wave_path,
)
from pytest_sabot.matrix.defects import load_published_defects, unregistered_defect_files
from pytest_sabot.matrix.task_views import load_private, load_public
from pytest_sabot.tasks.loader import PrivateSpec


@dataclass
class Standard:
    """A wave as data, ready to run and to score."""

    root: Path
    wave: WaveSpec
    cells: list[Cell]
    rules: RuleSet
    mappings: dict[str, MappingRevision]
    anchors: AnchorRegistry | None
    defects: list[PublishedDefect] = field(default_factory=list)
    """Disclosed defects of the published instrument this wave reproduces (SPEC I86)."""
    outside: OutsideRow | None = None
    """The one row of a pipeline outside the harness that replaced the wave's rows (a
    trusted local agent's, an MCP client's); None for a wave of framework adapters."""
    _private: dict[str, PrivateSpec] = field(default_factory=dict)
    # Looked up on every cell of a session: built once from ``cells`` (again if the list is
    # replaced), never passed in. The registration hash is of the files the standard was
    # loaded from, computed as it is loaded (SPEC I133).
    _by_id: tuple[list[Cell], int, dict[str, Cell]] | None = field(
        default=None, init=False, repr=False, compare=False
    )
    _paired: tuple[list[Cell], int, dict[str, list[str]]] | None = field(
        default=None, init=False, repr=False, compare=False
    )
    _registration: str | None = field(default=None, init=False, repr=False, compare=False)

    def anchors_for(self, task: str, operator: str | None) -> list[Anchor] | None:
        if operator is None or self.anchors is None:
            return None
        return self.anchors.for_cell(task, operator)

    def anchors_by_operator(self, task: str) -> dict[str, list[Anchor]]:
        if self.anchors is None:
            return {}
        found = {op: self.anchors.for_cell(task, op) for op in self.wave.operators}
        return {op: a for op, a in found.items() if a is not None}

    def private(self, task: str) -> PrivateSpec:
        if task not in self._private:
            self._private[task] = load_private(task, self.root)
        return self._private[task]

    def registration_hash(self) -> str:
        """sha256 over every cells/, tasks/ and mappings/ file this wave runs on, and the
        mapping file of a framework whose adapter ships its own outside the root: the files
        as :func:`load_standard` read them, whatever changed since (SPEC I133)."""
        if self._registration is None:
            self._registration = self._registration_hash()
        return self._registration

    def _registration_hash(self) -> str:
        own = [adapter(fw).mapping_path(self.root) for fw in self.wave.frameworks]
        outside = [p for p in own if not p.is_relative_to(self.root)]
        # The published-defect registry is registered with the waves it names alone (waves
        # 1 and 2 reproduce the T3 defect): it leaves every other wave's hash unchanged. So
        # is the spec file of an operator declared later, with the matrices that run it.
        skip = [*unregistered_defect_files(self.root, self.wave.wave),
                *unrun_operator_specs(self.root, self.wave.operators)]
        if self.wave.lab:
            # Another lab matrix's own files are registered with it alone.
            return registration_hash(
                self.root, outside, skip=[*skip, *other_lab_files(self.root, self.wave.wave)]
            )
        # The lab's files are registered with the lab matrices alone: adding or editing them
        # leaves the hash of every wave of the standard (and of a candidate) unchanged.
        return registration_hash(self.root, outside, skip=[*lab_files(self.root), *skip])

    def cell(self, cell_id: str) -> Cell:
        found = self._cells_by_id().get(cell_id)
        if found is None:
            raise KeyError(f"cell {cell_id!r} is not registered in wave {self.wave.wave}")
        return found

    def _cells_by_id(self) -> dict[str, Cell]:
        if not _indexes(self._by_id, self.cells):
            index: dict[str, Cell] = {}
            for cell in self.cells:
                index.setdefault(cell.id, cell)  # the first registered, as a scan finds it
            self._by_id = (self.cells, len(self.cells), index)
        assert self._by_id is not None
        return self._by_id[2]

    def paired_operators(self, baseline_id: str) -> list[str]:
        """The operators of the runnable fault cells that pair with a baseline, sorted."""
        if not _indexes(self._paired, self.cells):
            paired: dict[str, set[str]] = {}
            for cell in self.cells:
                if cell.operator is not None and not cell.carved_out:
                    paired.setdefault(cell.baseline_id, set()).add(cell.operator)
            by_base = {bid: sorted(ops) for bid, ops in paired.items()}
            self._paired = (self.cells, len(self.cells), by_base)
        assert self._paired is not None
        return list(self._paired[2].get(baseline_id, []))


def _indexes(index: tuple[list[Cell], int, Any] | None, cells: list[Cell]) -> bool:
    """Whether an index was built from this very list at its present length."""
    return index is not None and index[0] is cells and index[1] == len(cells)


def registration_hash(
    root: Path, outside: Sequence[Path] = (), *, skip: Sequence[Path] = ()
) -> str:
    """sha256 over the root's cells/, tasks/ and mappings/ files (names and contents), then
    over the files ``outside`` the root (an adapter's own mapping file). Files and folders
    in ``skip`` are left out."""
    digest = hashlib.sha256()
    for folder in ("cells", "tasks", "mappings"):
        for path in sorted((root / folder).rglob("*")):
            if any(path == s or path.is_relative_to(s) for s in skip):
                continue
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(str(path.relative_to(root)).encode())
                digest.update(b"\0")
                digest.update(path.read_bytes())
                digest.update(b"\0")
    for path in outside:
        digest.update(f"adapter mapping {path.name}".encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


def load_standard(
    wave: int | str, root: str | Path | None = None, *, rules: str | None = None
) -> Standard:
    """Load and validate one wave (optionally scored under another rule version)."""
    base = standard_root(root)
    spec, cells = load_wave(wave, base)
    book = load_rule_book(base / "mappings" / "rules.yaml")
    ruleset = book.get(rules or spec.rules)
    mappings: dict[str, MappingRevision] = {
        fw: load_mapping(base, fw, ruleset.version) for fw in spec.frameworks
    }
    anchors = load_wave_anchors(spec, wave_path(spec.wave, base))
    for task in spec.tasks:  # validate every task file now, before any run
        load_public(task, base, spec.contract_revision)
        load_private(task, base)
    defects = load_published_defects(base).for_wave(spec.wave)
    std = Standard(
        root=base, wave=spec, cells=cells, rules=ruleset, mappings=mappings, anchors=anchors,
        defects=defects,
    )
    std.registration_hash()  # of the files just read (SPEC I133)
    return std
