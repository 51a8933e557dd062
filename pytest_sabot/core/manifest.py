"""The session's own record: ``<out>/sessions/<run id>.json``.

Written when the selection is fixed (status ``running``: the session's first write to the
output directory, so a directory that cannot be written stops the session before any
cell) and rewritten when it ends with its status. Never removed. A session that selects
no cell writes nothing.

With it, a space reserve: a file of zeros sized for the session's results, written at the
start and released at the end, so that results.json and this manifest can still be
written when the disk fills up while cells run.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from pytest_sabot.core.models.states import SessionStatus
from pytest_sabot.core.records import SESSIONS_DIR
from pytest_sabot.core.trace_io import OutputUnwritable, write_json_atomic

MANIFEST_SCHEMA_VERSION = "1"
RESERVE_PER_CELL = 8 * 1024
RESERVE_BASE = 256 * 1024


def new_run_id() -> str:
    """Sortable and unique: UTC time of the start plus random hex."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


class SessionSelection(BaseModel):
    model_config = ConfigDict(extra="forbid")

    cell_ids: list[str] = Field(description="Cells the session selected (registry order).")
    pulled_in: list[str] = Field(
        default_factory=list, description="Baselines outside the selection it pairs with."
    )
    keyword: str | None = Field(None, description="The -k expression.")
    markexpr: str | None = Field(None, description="The -m expression.")
    filters: dict[str, list[str]] = Field(default_factory=dict, description="--sabot-* filters.")
    args: list[str] = Field(default_factory=list, description="The command line as given.")


class SessionRecord(BaseModel):
    """sessions/<run id>.json: who ran what, under what, and how it ended."""

    model_config = ConfigDict(extra="forbid")

    schema_version: str = Field(MANIFEST_SCHEMA_VERSION, description="Format version.")
    run_id: str
    tool: str = Field(description="pytest-sabot version.")
    wave: int
    rules: str = Field(description="Rule version the session scored under.")
    wave_rules: str
    model: str
    downgrade_model: str | None = None
    judge: str
    upstream: str | None = None
    registration_hash: str
    versions: dict[str, str]
    mode: str = Field(description="fresh or resume.")
    rerun_errors: bool = False
    started: str
    ended: str | None = None
    status: SessionStatus
    detail: str = ""
    host: str = Field(default_factory=socket.gethostname)
    pid: int = Field(default_factory=os.getpid)
    selection: SessionSelection
    recorded: int = Field(0, description="Selected runnable cells with a counted record.")
    not_run: dict[str, str] = Field(
        default_factory=dict, description="Cell -> reason, for every cell left without one."
    )
    set_aside: dict[str, str] = Field(
        default_factory=dict, description="Cell -> why its earlier record was set aside."
    )
    rerun_error_cells: list[str] = Field(
        default_factory=list, description="Recorded RUN_ERRORs run again (--sabot-rerun-errors)."
    )
    pulled_in_reused: list[str] = Field(
        default_factory=list, description="Pulled-in baselines reused from an earlier record."
    )
    pulled_in_run: list[str] = Field(
        default_factory=list, description="Pulled-in baselines this session ran."
    )


def manifest_path(out: Path, run_id: str) -> Path:
    return out / SESSIONS_DIR / f"{run_id}.json"


def write_manifest(out: Path, record: SessionRecord) -> Path:
    path = manifest_path(out, record.run_id)
    write_json_atomic(path, record.model_dump(mode="json"))
    return path


def read_manifests(out: Path) -> list[SessionRecord]:
    folder = out / SESSIONS_DIR
    if not folder.is_dir():
        return []
    return [
        SessionRecord.model_validate_json(p.read_text(encoding="utf-8"))
        for p in sorted(folder.glob("*.json"))
    ]


def reserve_path(out: Path, run_id: str) -> Path:
    return out / f".sabot-reserve-{run_id}"


def reserve(out: Path, run_id: str, cells: int) -> Path:
    """Hold space for the session's results (released by ``release``)."""
    path = reserve_path(out, run_id)
    size = RESERVE_BASE + RESERVE_PER_CELL * cells
    chunk = b"\0" * (64 * 1024)
    try:
        with path.open("wb") as fh:
            left = size
            while left > 0:
                fh.write(chunk[: min(left, len(chunk))])
                left -= len(chunk)
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        release(path)
        raise OutputUnwritable(path, exc) from exc
    return path


def release(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
