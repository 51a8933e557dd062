"""Fixtures of the scale tests: whole sessions run as users run them (a fresh interpreter
per session), with xdist workers, shards and remote-style gateways."""

from __future__ import annotations

import sys
from pathlib import Path

# The loopback stand-in provider of the live-path tests.
LIVE = Path(__file__).resolve().parents[1] / "live"
if str(LIVE) not in sys.path:
    sys.path.insert(0, str(LIVE))
