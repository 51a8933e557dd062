"""Development conveniences for this repository (an installed pytest-sabot registers itself
through its pytest11 entry point and needs no conftest)."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest


def _cache_bytecode_outside_the_tree() -> None:
    """Where the environment forbids writing bytecode (``PYTHONDONTWRITEBYTECODE``), every
    interpreter the suite starts (xdist workers, the documented commands, whole plugin
    sessions) would compile the package and pytest would rewrite its assertions afresh:
    seconds of each child's start. Keep the tree free of ``__pycache__`` as asked, but cache
    the bytecode in one directory outside it (``PYTHONPYCACHEPREFIX``), shared by every
    child; Python checks each cached file against its source, so a stale one is never used."""
    if not os.environ.get("PYTHONDONTWRITEBYTECODE") or os.environ.get("PYTHONPYCACHEPREFIX"):
        return
    prefix = Path(tempfile.gettempdir()) / f"pytest-sabot-pycache-{os.getuid()}"
    del os.environ["PYTHONDONTWRITEBYTECODE"]
    os.environ["PYTHONPYCACHEPREFIX"] = str(prefix)
    sys.pycache_prefix = str(prefix)
    sys.dont_write_bytecode = False


_cache_bytecode_outside_the_tree()


def pytest_report_header(config: pytest.Config) -> str:
    from pytest_sabot.core.paths import standard_root

    return f"sabot standard root: {standard_root()}"
