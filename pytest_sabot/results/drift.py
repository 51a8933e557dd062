"""What a rebuilt results.json changes against the one on disk, cell by cell, in words
(``sabot rescore`` prints it under "DIFFERS"): which cell lost its verdict and why (a
damaged record names its file, line and what is wrong), which verdict changed, which cell
gained one, and which other fields moved."""

from __future__ import annotations

from typing import Any

from pytest_sabot.results.build import ResultsFile

_SHOWN = ("detection", "status", "excluded", "reacted", "recovered", "detected_soft")


def _verdict_words(cell: dict[str, Any]) -> str:
    parts = []
    for key in _SHOWN:
        if key in cell:
            value = cell[key]
            if key == "excluded" and isinstance(value, dict):
                value = value.get("code")
            parts.append(f"{key}={value}")
    return ", ".join(parts)


def drift(original: ResultsFile, fresh: ResultsFile) -> list[str]:
    """One line per difference: cells first (in the original's order), then fields."""
    before = {c.cell_id: c.model_dump(mode="json") for c in original.cells}
    after = {c.cell_id: c.model_dump(mode="json") for c in fresh.cells}
    why = {n.cell_id: n for n in fresh.selection.not_run}
    unpaired = {u.cell_id: u.reason for u in fresh.selection.unpaired}
    lines: list[str] = []
    for cid, cell in before.items():
        if cid not in after:
            if cid in why:
                n = why[cid]
                said = f"{n.reason}: {n.detail}" if n.detail else n.reason
            else:
                said = unpaired.get(cid, "no longer scored")
            lines.append(f"cell {cid}: no verdict now ({said})")
        elif after[cid] != cell:
            old, new = _verdict_words(cell), _verdict_words(after[cid])
            change = f"{old} -> {new}" if old != new else "details of its verdict changed"
            lines.append(f"cell {cid}: {change}")
    for cid in after:
        if cid not in before:
            lines.append(f"cell {cid}: a verdict now ({_verdict_words(after[cid])})")
    mine = original.model_dump(mode="json", exclude={"cells"})
    theirs = fresh.model_dump(mode="json", exclude={"cells"})
    for key in sorted(set(mine) | set(theirs)):
        if mine.get(key) != theirs.get(key):
            lines.append(f"field {key!r} differs")
    return lines
