"""The benches under bench/ as modules, for the tests that check their arithmetic (a bench
is a script, not a package: it is loaded from its file)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH_DIR = Path(__file__).resolve().parents[2] / "bench"


def load_bench(name: str) -> ModuleType:
    """``bench/<name>.py`` loaded as the module ``<name>_bench`` (registered in sys.modules,
    so its dataclasses resolve their own annotations)."""
    spec = importlib.util.spec_from_file_location(f"{name}_bench", BENCH_DIR / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
