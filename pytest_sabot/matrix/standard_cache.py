"""The parsed standard, kept between the processes of a session (and between sessions).

A pytest session parses the same wave in every process that collects it: the controller and
each xdist worker. :func:`load_standard_cached` parses it once and keeps the result, whole
(every task's private spec included), in a cache directory; the next process that loads the
same wave from the same files reads it back instead of parsing and validating them again.

An entry is used only when it was made from exactly the files there now. Its key is a
sha256 over the names and contents of every file under the root's ``cells/``, ``tasks/`` and
``mappings/`` (all of them, whichever the wave registers), the wave and rule version asked
for, the root's path, and the Python, pydantic and pytest-sabot code it was made with (each
module's size and modification time); the entry also names every file it read outside the
root (an adapter's own mapping file) with its sha256: on each read the adapters registered
then must point at the same files with the same contents. Editing,
adding or removing any of them makes a new key: the old entry is never used for it.

The cache is only a shortcut: an entry that cannot be read or written is ignored and the
wave is parsed as without it, so a problem in a file is reported by the parser as always.
It is off unless ``$SABOT_CACHE_DIR`` names a folder for it: an entry is read back as
Python objects, so the cache must live where nothing the session runs (a pipeline under
test, a trusted agent) may write, which a shared default such as ``~/.cache`` is not. Its
folder is made for its owner alone and none is read from a folder another user may write
to; ``SABOT_CACHE_DIR=off`` (or unset) leaves it off. Only the newest :data:`KEEP` entries
are kept.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import sys
from pathlib import Path
from typing import Any

import pydantic

from pytest_sabot.core.frameworks import adapter
from pytest_sabot.core.paths import standard_root
from pytest_sabot.core.trace_io import write_bytes_atomic
from pytest_sabot.matrix.standard import Standard, load_standard

__all__ = ["KEEP", "cache_dir", "load_standard_cached", "standard_key"]

FORMAT = 1
"""Bumped when an entry's layout changes."""
KEEP = 16
"""How many entries the cache keeps (the newest)."""
_FOLDERS = ("cells", "tasks", "mappings")
_PACKAGE = Path(__file__).resolve().parents[1]
_CODE = ("core", "matrix", "tasks")
"""The package's folders whose modules parse the standard or define what an entry holds."""


def cache_dir() -> Path | None:
    """Where entries live; None when the cache is turned off."""
    chosen = os.environ.get("SABOT_CACHE_DIR", "")
    if not chosen or chosen.lower() == "off":
        return None
    return Path(chosen).expanduser() / "standards"


def _code_digest() -> str:
    """The code that parses and holds the standard (the modules of :data:`_CODE`, by size
    and modification time), with the Python and pydantic versions."""
    digest = hashlib.sha256(f"{FORMAT} {sys.version} {pydantic.VERSION}".encode())
    for path in sorted(p for folder in _CODE for p in (_PACKAGE / folder).rglob("*.py")):
        stat = path.stat()
        digest.update(f"{path.relative_to(_PACKAGE)} {stat.st_size} {stat.st_mtime_ns}\0".encode())
    return digest.hexdigest()


def standard_key(wave: int | str, root: Path, rules: str | None) -> str:
    """The key of one wave's entry: the files under the root and what was asked for."""
    digest = hashlib.sha256(f"{wave}\0{rules}\0{root}\0{_code_digest()}\0".encode())
    for folder in _FOLDERS:
        for path in sorted((root / folder).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(str(path.relative_to(root)).encode() + b"\0")
                digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def _file_sha(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _outside_files(std: Standard) -> dict[str, str | None]:
    """The files the wave was read from outside its root, with their sha256."""
    paths = [adapter(fw).mapping_path(std.root) for fw in std.wave.frameworks]
    return {str(p): _file_sha(p) for p in paths if not p.is_relative_to(std.root)}


def _own_private(folder: Path) -> bool:
    """Whether entries there can only be this user's: a folder of ours that no one else
    may write to (an entry is read back as Python objects)."""
    if not folder.is_dir():
        return False
    stat = folder.stat()
    return stat.st_uid == os.getuid() and not stat.st_mode & 0o022


def _read(path: Path, key: str) -> Standard | None:
    try:
        entry: Any = pickle.loads(path.read_bytes())
    except Exception:  # a damaged or foreign entry is ignored, never trusted
        return None
    if not isinstance(entry, dict) or entry.get("key") != key:
        return None
    std, outside = entry.get("standard"), entry.get("outside")
    if not isinstance(std, Standard) or not isinstance(outside, dict):
        return None
    # The files outside the root are the ones the adapters registered NOW point at (another
    # session may register the same adapter from another folder), with the contents read.
    try:
        now = _outside_files(std)
    except Exception:  # an adapter not registered here: the parser says so
        return None
    return std if now == outside else None


def _write(folder: Path, key: str, std: Standard) -> None:
    entry = {"key": key, "standard": std, "outside": _outside_files(std)}
    with contextlib.suppress(OSError):
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_bytes_atomic(folder / f"{key}.pickle", pickle.dumps(entry, protocol=5))
        entries = sorted(folder.glob("*.pickle"), key=lambda p: p.stat().st_mtime_ns)
        for old in entries[:-KEEP]:
            old.unlink(missing_ok=True)


def load_standard_cached(
    wave: int | str, root: str | Path | None = None, *, rules: str | None = None
) -> Standard:
    """:func:`~pytest_sabot.matrix.standard.load_standard`, read from the cache when an
    entry made from the same files is there (and written to it when none is)."""
    folder = cache_dir()
    if folder is None:
        return load_standard(wave, root, rules=rules)
    base = standard_root(root)
    try:
        key = standard_key(wave, base, rules)
    except OSError:  # a file that cannot be read: the parser names it
        return load_standard(wave, base, rules=rules)
    path = folder / f"{key}.pickle"
    with contextlib.suppress(OSError):
        if _own_private(folder):
            cached = _read(path, key)
            if cached is not None:
                return cached
    std = load_standard(wave, base, rules=rules)
    for task in std.wave.tasks:  # parsed already; kept with the entry
        std.private(task)
    _write(folder, key, std)
    return std
