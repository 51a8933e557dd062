"""Reading and rewriting a results directory from a command (``sabot rescore``, ``sabot
report``, ``sabot merge``): results.json read with a clear error, and the output's session
lock held while its files are rewritten."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.core.records import OutputInUse

if TYPE_CHECKING:
    from pytest_sabot.results import ResultsFile


@contextmanager
def writing(directory: Path, command: str) -> Iterator[None]:
    """Hold the output's session lock while a command rewrites its results: never while a
    session is writing them (an OutputInUse error names that session)."""
    from pytest_sabot.core.records import SessionLock

    lock = SessionLock(directory)
    try:
        lock.acquire(command)
    except OutputInUse as exc:
        raise OutputInUse(f"{directory}: {exc}; {command} rewrites nothing") from None
    try:
        yield
    finally:
        lock.release()


def records_home(board_dir: Path) -> Path:
    """The output directory whose cell records a board scores: a board kept apart from its
    directory's (``slices/<run id>/``, ``readings/<rules>/``: SPEC I97, I98) scores the
    records of the directory it sits in; any other board, those beside it."""
    from pytest_sabot.results import READINGS_DIR, SLICES_DIR

    board_dir = board_dir.parent if board_dir.is_file() else board_dir
    parent = board_dir.parent
    if parent.name in (READINGS_DIR, SLICES_DIR) and (parent.parent / "cells").is_dir():
        return parent.parent
    return board_dir


def read_results_of(path: Path) -> ResultsFile:
    """results.json of a directory, with a clear error when it is missing or not ours."""
    from pytest_sabot.core.loading import parse_json
    from pytest_sabot.results import RESULTS_FILE, RESULTS_SCHEMA_VERSION, read_results

    if not path.exists():
        raise SabotDataError(path, "", "an output directory of pytest --sabot-wave (or its "
                             "results.json)", "no such file or directory")
    file = path / RESULTS_FILE if path.is_dir() else path
    if not file.is_file():
        raise SabotDataError(file, "", "a results.json written by pytest --sabot-wave",
                             "no such file in the directory")
    raw = parse_json(file.read_text(encoding="utf-8"), file)
    version = raw.get("schema_version") if isinstance(raw, dict) else None
    if version != RESULTS_SCHEMA_VERSION:
        raise SabotDataError(
            file, "schema_version", f"{RESULTS_SCHEMA_VERSION} (this pytest-sabot's format)",
            version,
        )
    from pydantic import ValidationError

    from pytest_sabot.core.errors import from_validation_error

    try:
        return read_results(file)
    except ValidationError as exc:  # named: the file, the field and what it should hold
        raise from_validation_error(file, exc) from None


__all__ = ["read_results_of", "writing"]
