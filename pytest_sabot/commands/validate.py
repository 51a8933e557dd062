"""``sabot validate [ROOT]``: load every registered wave with its tasks, mappings and
anchors, and report each error found (exit 2 when there is one)."""

from __future__ import annotations

import argparse

from pytest_sabot.commands import EXIT_ERROR, EXIT_PASS
from pytest_sabot.core.errors import SabotDataError


def cmd_validate(args: argparse.Namespace) -> int:
    """Load every wave with its tasks, mappings and anchors; report each error found."""
    from pytest_sabot.core.paths import standard_root
    from pytest_sabot.matrix.cells import available_waves
    from pytest_sabot.matrix.standard import load_standard

    root = standard_root(args.root)
    errors = 0
    for wave in available_waves(root):
        try:
            std = load_standard(wave, root)
        except SabotDataError as exc:
            errors += 1
            print(f"wave {wave}: {exc}")
            continue
        print(f"wave {wave}: ok ({len(std.cells)} cells, rules {std.rules.version})")
    return EXIT_ERROR if errors else EXIT_PASS
