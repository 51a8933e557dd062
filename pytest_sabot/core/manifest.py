"""The session's own record: ``<out>/sessions/<run id>.json``.

Written when the selection is fixed (status ``running``: the session's first write to the
output directory, so a directory that cannot be written stops the session before any
cell) and rewritten when it ends with its status. Never removed. A session that selects
no cell writes nothing.

With it, a space reserve: a file of zeros sized for the session's results, written at the
start and released at the end, so that results.json and this manifest can still be
written when the disk fills up while cells run.

The manifest names every framework adapter the session ran (where it was registered from,
its declaration's target, its packages' pins) and, for a framework whose mapping file lives
outside the standard root (a third party's adapter, ``--sabot-adapter``, a trusted agent),
keeps a copy of that mapping beside it (``sessions/<run id>.adapters/<framework>/``), so
the session's records can be read and rescored where the adapter is not installed
(SPEC I107).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import socket
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from pydantic import Field

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.core.frameworks import ADAPTERS, adapter
from pytest_sabot.core.models.base import StrictModel
from pytest_sabot.core.models.states import SessionStatus
from pytest_sabot.core.models.trace import Framework
from pytest_sabot.core.records import SESSIONS_DIR
from pytest_sabot.core.trace_io import OutputUnwritable, write_bytes_atomic, write_json_atomic

MANIFEST_SCHEMA_VERSION = "1"
RESERVE_PER_CELL = 8 * 1024
RESERVE_BASE = 256 * 1024


def new_run_id() -> str:
    """Sortable and unique: UTC time of the start plus random hex."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


class SessionSelection(StrictModel):
    cell_ids: list[str] = Field(description="Cells the session selected (registry order).")
    pulled_in: list[str] = Field(
        default_factory=list, description="Baselines outside the selection it pairs with."
    )
    keyword: str | None = Field(None, description="The -k expression.")
    markexpr: str | None = Field(None, description="The -m expression.")
    filters: dict[str, list[str]] = Field(default_factory=dict, description="--sabot-* filters.")
    args: list[str] = Field(default_factory=list, description="The command line as given.")


class AdapterRecord(StrictModel):
    """One framework adapter a session ran."""

    framework: Framework
    origin: str = Field(
        description="Where it was registered from: an entry point of a distribution, the "
        "source checkout, --sabot-adapter or --sabot-agent."
    )
    target: str = Field(description="module:factory of the adapter's declaration.")
    packages: dict[str, str] = Field(
        default_factory=dict, description="Distribution -> the version the adapter pins."
    )
    mapping: str = Field(
        description="Its mapping file: 'mappings/<name>' of the standard root, or the copy "
        "kept beside the manifest ('sessions/<run id>.adapters/<framework>/<name>', relative "
        "to the output directory) when the adapter ships its own."
    )
    mapping_sha256: str = Field(description="sha256 of that mapping file.")
    kept: bool = Field(
        False, description="Whether ``mapping`` is the copy kept in the output directory."
    )


class SessionRecord(StrictModel):
    """sessions/<run id>.json: who ran what, under what, and how it ended."""

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
    matrix: str = Field("", description="Name of the matrix the session ran (its cells file).")
    root: str | None = Field(
        None,
        description="The standard root the session loaded its matrix from (--sabot-root, "
        "absolute), None for the shipped standard: rescore and inspect read it again when "
        "no --sabot-root is given.",
    )
    agent: str | None = Field(
        None,
        description="--sabot-agent's module:callable when a trusted local agent's row "
        "replaced the wave's rows (its name in 'outside_row').",
    )
    outside_row: str | None = Field(
        None,
        description="The framework of the one row of a pipeline outside the harness that "
        "replaced the wave's rows: 'mcp_client' for a sabot mcp session, the trusted "
        "agent's row (--sabot-agent-row, by default built from the callable) for a "
        "--sabot-agent session, whose callable is in 'agent'. A --sabot-agent session "
        "recorded without it ran the row 'local_agent'.",
    )
    adapters: list[AdapterRecord] = Field(
        default_factory=list, description="Every framework adapter of the session's rows."
    )


def recorded_root(root: Path) -> str | None:
    """What a manifest records of the standard root a session loaded: its absolute path,
    or None when it is the shipped standard (found again wherever the package is)."""
    from pytest_sabot.core.paths import shipped_root

    given = Path(root).resolve()
    return None if given == shipped_root().resolve() else str(given)


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
    return [read_manifest(p) for p in sorted(folder.glob("*.json"))]


def read_manifest(path: Path) -> SessionRecord:
    """One session's manifest; a damaged one is a SabotDataError naming the file."""
    from pytest_sabot.core.loading import parse_json, validate

    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SabotDataError(path, "", "a readable session manifest", exc.strerror) from None
    try:
        return SessionRecord.model_validate_json(data)
    except ValueError:  # read it again the way that names the line or the field
        return validate(path, SessionRecord, parse_json(data, path), top_field="")


def adapters_path(out: Path, run_id: str) -> Path:
    """The folder beside a session's manifest holding the mappings it keeps."""
    return out / SESSIONS_DIR / f"{run_id}.adapters"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def keep_adapters(
    out: Path, run_id: str, root: Path, frameworks: Iterable[str]
) -> list[AdapterRecord]:
    """The adapter records of a session's frameworks; a mapping outside the standard root
    is copied beside the manifest once (a copy is added, never replaced)."""
    records = []
    for name in dict.fromkeys(frameworks):
        declared = adapter(name)
        entry = ADAPTERS.entry(name)
        source = declared.mapping_path(root)
        digest = _sha256(source)
        kept = not source.resolve().is_relative_to(Path(root).resolve())
        if kept:
            target = adapters_path(out, run_id) / name / source.name
            if not target.is_file() or _sha256(target) != digest:
                write_bytes_atomic(target, source.read_bytes())
            where = str(target.relative_to(out))
        else:
            where = str(source.resolve().relative_to(Path(root).resolve()))
        records.append(
            AdapterRecord(
                framework=name,
                origin=entry.origin,
                target=entry.target if isinstance(entry.target, str) else repr(entry.target),
                packages=dict(declared.packages),
                mapping=where,
                mapping_sha256=digest,
                kept=kept,
            )
        )
    return records


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
