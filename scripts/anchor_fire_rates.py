#!/usr/bin/env python
"""Per registered anchor: its fire rate in FLAGS lines (and any event text) of clean baseline
traces, next to its own cell's faulted rate.

    python scripts/anchor_fire_rates.py reports/wave-2 --wave 2
    python scripts/anchor_fire_rates.py reports/wave-3 --anchors cells/anchors-wave3.yaml --json
"""

from __future__ import annotations

import sys

from pytest_sabot.commands.anchor_rates import main

if __name__ == "__main__":
    sys.exit(main())
