"""``--sabot-shard K/N``: one of N parts of a wave's selection, the same on every machine.

The unit of the split is a baseline group: a baseline and the fault cells that pair with
it (SPEC I41). A group is never cut, so a shard runs the baselines its fault cells need and
no baseline runs in two shards; ``sabot merge`` then finds every record exactly once.
Groups are dealt out by size, the largest first, each to the least loaded shard (ties to
the lowest K, groups of one size in the order of their baseline id): the split depends only
on which cells are selected, never on the order they were collected in, the machine or the
Python hash seed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from pytest_sabot.core.models.cells import Cell
from pytest_sabot.session.selection import cell_id_of, is_cell_item

FILTER_KEY = "shard"


@dataclass(frozen=True)
class Shard:
    index: int  # K, from 1
    count: int  # N

    @classmethod
    def parse(cls, text: str) -> Shard:
        k, _, n = text.partition("/")
        return cls(int(k), int(n))

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def groups(cells: Iterable[Cell]) -> dict[str, list[Cell]]:
    """The selection's baseline groups, by baseline id."""
    out: dict[str, list[Cell]] = {}
    for cell in cells:
        out.setdefault(cell.baseline_id, []).append(cell)
    return out


def _weight(group: Sequence[Cell]) -> int:
    """The runs a group costs: its runnable cells, and its baseline when only its fault
    cells are selected (the baseline is pulled in)."""
    runnable = [c for c in group if not c.carved_out]
    pulled = 1 if runnable and not any(c.is_baseline for c in group) else 0
    return len(runnable) + pulled


def assign(cells: Iterable[Cell], count: int) -> dict[str, int]:
    """Cell id -> its shard (1..count)."""
    by_group = groups(cells)
    load = [0] * count
    out: dict[str, int] = {}
    for key in sorted(by_group, key=lambda k: (-_weight(by_group[k]), k)):
        target = min(range(count), key=lambda j: (load[j], j))
        load[target] += _weight(by_group[key])
        for cell in by_group[key]:
            out[cell.id] = target + 1
    return out


def check(shard: Shard, cells: Sequence[Cell]) -> None:
    """Refuse a split that leaves a shard without a baseline group (before anything runs)."""
    found = len(groups(cells))
    if shard.count > found:
        raise pytest.UsageError(
            f"pytest-sabot: --sabot-shard={shard}: the selection has {found} baseline "
            f"group(s) (a baseline and its fault cells always run in one shard), so at most "
            f"{found} shard(s) have cells; use --sabot-shard=K/{max(found, 1)} or fewer"
        )


class ShardHooks:
    """Deselects every cell test outside this process's shard, after pytest's own
    selection (-k, -m, node ids) and in every process alike (xdist workers included, which
    must all collect the same items). Tests that are not cells are left as they are."""

    def __init__(self, shard: Shard, std: Any) -> None:
        self.shard = shard
        self.std = std

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        cells = []
        for item in items:
            cid = cell_id_of(item.nodeid) if is_cell_item(item) else None
            if cid is not None:
                cells.append(self.std.cell(cid))
        owner = assign(cells, self.shard.count)
        keep: list[pytest.Item] = []
        dropped: list[pytest.Item] = []
        for item in items:
            cid = cell_id_of(item.nodeid) if is_cell_item(item) else None
            if cid is None or owner.get(cid) == self.shard.index:
                keep.append(item)
            else:
                dropped.append(item)
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = keep


def configure(
    config: pytest.Config, std: Any, cells: Sequence[Cell], controller: bool
) -> Shard | None:
    """--sabot-shard K/N (the command line, SABOT_SHARD or the ini key), None when not
    given. The controller refuses a split that leaves a shard empty; every process that
    collects deselects the cells of the other shards."""
    from pytest_sabot.session.options import BY_DEST, OptionValueError, resolve
    from pytest_sabot.session.settings import _ini

    spec = BY_DEST["sabot_shard"]
    try:
        given = resolve(spec, config.getoption(spec.dest, None), _ini(config, spec.dest))
    except OptionValueError as exc:
        raise pytest.UsageError(f"pytest-sabot: {exc}") from None
    if not given:
        return None
    shard = Shard.parse(given)
    if controller:
        check(shard, cells)
    config.pluginmanager.register(ShardHooks(shard, std), "sabot-shard")
    return shard
