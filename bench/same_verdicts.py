"""Check: two keyless sessions of the same selection recorded the same thing, cell by cell.

    python bench/same_verdicts.py BEFORE_OUT AFTER_OUT [--events all|N]

Compares the two ``results.json`` files cell by cell (every field of every cell: verdict,
funnel fields, flags, fire lists) and the two ``events.jsonl`` of each cell (all cells by
default, or every N-th), ignoring only what a clock writes (the event time ``t`` and any
``*_ms`` field) and the session id. ``outcome.json`` is compared the same way.
Prints the counts and every difference; exits 1 on any difference. Meant for a change that
must not move a verdict (for instance one that reuses framework objects across runs).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

# What differs between any two sessions whatever they ran: clock readings and the session's
# own id (outcome.json carries it).
_CLOCK_KEYS = {"t", "started_at", "ended_at", "wall_s", "duration_s", "elapsed_s", "session"}


def _scrub(value: Any) -> Any:
    """The value without clock fields (recursively)."""
    if isinstance(value, dict):
        return {
            k: _scrub(v)
            for k, v in value.items()
            if k not in _CLOCK_KEYS and not k.endswith(("_ms", "_seconds"))
        }
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    return value


def _events(path: Path) -> list[Any]:
    if not path.is_file():
        return []
    return [_scrub(json.loads(line)) for line in path.read_text("utf-8").splitlines() if line]


def _first_difference(a: Any, b: Any, where: str = "") -> str:
    if type(a) is not type(b):
        return f"{where}: {a!r} != {b!r}"
    if isinstance(a, dict):
        for key in sorted(set(a) | set(b)):
            if a.get(key, "<absent>") != b.get(key, "<absent>"):
                return _first_difference(a.get(key), b.get(key), f"{where}.{key}")
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{where}: {len(a)} items != {len(b)} items"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                return _first_difference(x, y, f"{where}[{i}]")
    return f"{where}: {str(a)[:200]!r} != {str(b)[:200]!r}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1] if __doc__ else "")
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--events", default="all", help="'all' or compare every N-th cell")
    args = parser.parse_args(argv)

    cells = {}
    for side in (args.before, args.after):
        doc = json.loads((side / "results.json").read_text("utf-8"))
        cells[side] = {c["cell_id"]: c for c in doc["cells"]}
    before, after = cells[args.before], cells[args.after]
    differences: list[str] = []
    if set(before) != set(after):
        differences.append(
            f"cell sets differ: {len(set(before) - set(after))} only before, "
            f"{len(set(after) - set(before))} only after"
        )
    common = sorted(set(before) & set(after))
    for cell_id in common:
        if before[cell_id] != after[cell_id]:
            difference = _first_difference(before[cell_id], after[cell_id])
            differences.append(f"results {cell_id}{difference}")
    step = 1 if args.events == "all" else max(1, int(args.events))
    compared = 0
    event_count = 0
    for cell_id in common[::step]:
        for name in ("events.jsonl", "outcome.json"):
            a_path = args.before / "cells" / cell_id / name
            b_path = args.after / "cells" / cell_id / name
            if name == "events.jsonl":
                a, b = _events(a_path), _events(b_path)
                event_count += len(a)
            else:
                a = _scrub(json.loads(a_path.read_text("utf-8"))) if a_path.is_file() else None
                b = _scrub(json.loads(b_path.read_text("utf-8"))) if b_path.is_file() else None
            if a != b:
                differences.append(f"{name} {cell_id}" + _first_difference(a, b))
        compared += 1
    verdicts: dict[str, int] = {}
    for cell in before.values():
        reading = str(cell.get("excluded") or cell.get("detection") or cell.get("status"))
        verdicts[reading] = verdicts.get(reading, 0) + 1
    print(
        json.dumps(
            {
                "cells_before": len(before),
                "cells_after": len(after),
                "results_cells_compared": len(common),
                "trace_cells_compared": compared,
                "events_compared": event_count,
                "verdict_counts_before": verdicts,
                "differences": len(differences),
            },
            indent=1,
        )
    )
    for line in differences[:50]:
        print(line)
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
