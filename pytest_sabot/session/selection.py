"""Which cells the session runs: fixed once pytest has made its final selection.

pytest deselects by ``-k``, ``-m``, ``--lf`` and pasted node ids after the plugins'
collection hooks have seen the items, so the selection is read where it is final: the
items of ``pytest_collection_finish`` (a process that collects) or the node ids a worker
reports to the xdist controller. Every selected fault cell whose baseline is outside the
selection pulls that baseline in: it runs too (or an earlier record of it is reused), so
the fault cell's validity is known, never assumed (SPEC I41).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import pytest

from pytest_sabot.core.models.cells import Cell

if TYPE_CHECKING:
    from pytest_sabot.matrix.standard import Standard

CELL_MODULE = Path(__file__).resolve().parent.parent / "sabot_cells.py"
CELL_TEST = "test_cell"
_CELL_NODE = re.compile(r"(?:^|::)test_cell\[(?P<id>[^\]]+)\]$")


def cell_id_of(nodeid: str) -> str | None:
    """The cell id of a ``test_cell[...]`` node id, else None."""
    match = _CELL_NODE.search(nodeid)
    return match["id"] if match else None


def is_cell_item(item: pytest.Item) -> bool:
    return (
        isinstance(item, pytest.Function)
        and item.originalname == CELL_TEST
        and Path(str(item.path)).resolve() == CELL_MODULE
    )


def cell_ids_of_items(items: Iterable[pytest.Item]) -> list[str]:
    out = []
    for item in items:
        if is_cell_item(item):
            cid = cell_id_of(item.nodeid)
            if cid is not None:
                out.append(cid)
    return out


@dataclass(frozen=True)
class Selection:
    """The fixed selection of one session."""

    cells: list[Cell]  # selected, registry order, carve-outs included
    pulled_in: list[Cell]  # baselines outside the selection that selected fault cells need
    keyword: str | None = None
    markexpr: str | None = None
    filters: dict[str, list[str]] = field(default_factory=dict)
    args: list[str] = field(default_factory=list)

    @property
    def ids(self) -> list[str]:
        return [c.id for c in self.cells]

    @property
    def runnable(self) -> list[Cell]:
        return [c for c in self.cells if not c.carved_out]

    @property
    def to_record(self) -> list[Cell]:
        """Every cell the session must leave a record for: the runnable selected cells and
        the pulled-in baselines."""
        return [*self.runnable, *self.pulled_in]


def fix(
    std: Standard,
    cell_ids: Iterable[str],
    config: pytest.Config,
    filters: dict[str, list[str]],
) -> Selection:
    wanted = set(cell_ids)
    cells = [c for c in std.cells if c.id in wanted]
    chosen = {c.id for c in cells}
    needed = sorted(
        {c.baseline_id for c in cells if not c.carved_out and not c.is_baseline} - chosen
    )
    pulled_ids = set(needed)
    pulled = [c for c in std.cells if c.id in pulled_ids]
    keyword = config.getoption("keyword", "") or None
    markexpr = config.getoption("markexpr", "") or None
    return Selection(
        cells=cells,
        pulled_in=pulled,
        keyword=keyword,
        markexpr=markexpr,
        filters=dict(filters),
        args=recordable_args(config.invocation_params.args),
    )


SECRET_OPTIONS = ("--sabot-gateway-url",)


def recordable_args(args: Sequence[object]) -> list[str]:
    """The command line as it may be written down: the value of an option that carries the
    gateway's session secret is reduced to its origin (``http://127.0.0.1:<port>/...``)."""
    out: list[str] = []
    hide_next = False
    for raw in (str(a) for a in args):
        if hide_next:
            out.append(_without_secret(raw))
            hide_next = False
            continue
        name, eq, value = raw.partition("=")
        if name in SECRET_OPTIONS:
            out.append(f"{name}={_without_secret(value)}" if eq else raw)
            hide_next = not eq
            continue
        out.append(raw)
    return out


def _without_secret(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}/..." if parts.netloc else "..."


def rewrite_pasted_ids(config: pytest.Config) -> None:
    """Make the node ids pytest prints for cells usable as arguments: a cell's node id is
    ``::test_cell[<cell id>]`` (the cell module lives in the installed package, outside
    the rootdir), which pytest alone cannot resolve. Such an argument, and one naming the
    cell module by file name, is pointed at the cell module."""
    names = {str(CELL_MODULE), CELL_MODULE.name}
    rewritten = []
    for arg in config.args:
        path, sep, rest = str(arg).partition("::")
        if sep and (path == "" or path in names or Path(path).name == CELL_MODULE.name):
            rewritten.append(f"{CELL_MODULE}::{rest}")
        else:
            rewritten.append(arg)
    config.args[:] = rewritten


def collect_cell_module(config: pytest.Config) -> None:
    """Add the cell module to what pytest collects. Explicit paths stay (a user may run
    their own tests beside the wave); a node id of a cell selects just that cell."""
    if any(Path(str(arg).split("::", 1)[0]).resolve() == CELL_MODULE for arg in config.args):
        return
    if any(str(arg).split("::", 1)[0] == CELL_MODULE.name for arg in config.args):
        return
    if config.args_source == pytest.Config.ArgsSource.ARGS:
        config.args.append(str(CELL_MODULE))
    else:
        config.args[:] = [str(CELL_MODULE)]
