"""Where the standard's data (cells/, tasks/, mappings/) lives.

Resolution order: an explicit root (``--sabot-root`` / ``SABOT_ROOT``), then the copy that
ships inside the installed wheel (``pytest_sabot/_standard``), then the source checkout the
package was imported from (editable installs).
"""

from __future__ import annotations

import os
from pathlib import Path

from pytest_sabot.core.errors import SabotDataError

_PACKAGE_DIR = Path(__file__).resolve().parent.parent  # pytest_sabot/
_DATA_DIRS = ("cells", "tasks", "mappings")


def _is_root(path: Path) -> bool:
    return all((path / d).is_dir() for d in _DATA_DIRS)


def standard_root(explicit: str | Path | None = None) -> Path:
    """Return the directory holding cells/, tasks/ and mappings/."""
    chosen = explicit if explicit is not None else os.environ.get("SABOT_ROOT")
    if chosen:
        root = Path(chosen).expanduser().resolve()
        if not _is_root(root):
            raise SabotDataError(
                root, "sabot_root", "a directory containing cells/, tasks/ and mappings/"
            )
        return root
    return shipped_root()


def shipped_root() -> Path:
    """The standard that comes with the package (an installed copy or the checkout's)."""
    for candidate in (_PACKAGE_DIR / "_standard", _PACKAGE_DIR.parent):
        if _is_root(candidate):
            return candidate
    raise SabotDataError(
        _PACKAGE_DIR, "sabot_root", "an installed copy of cells/, tasks/, mappings/"
    )
