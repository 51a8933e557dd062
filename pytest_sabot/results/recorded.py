"""The matrix a recorded session ran, loaded again to read its records offline
(``sabot rescore``, ``sabot inspect``), on a machine where the session's adapter may not be
installed (SPEC I107).

The session's manifest names every adapter it ran and keeps a copy of each mapping file
that lives outside the standard root. A framework that is not registered here is stood in
for by that record (its mapping, its packages' pins: nothing of it can run); an installed
adapter is always the one used. A session whose rows were a trusted local agent's
(``--sabot-agent``) is loaded with that row in place of the wave's, as it ran: under the
name the manifest records (``outside_row``), scored by the mapping kept beside it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.core.frameworks import forget_recorded, register_recorded
from pytest_sabot.core.manifest import AdapterRecord, SessionRecord, read_manifest
from pytest_sabot.core.paths import standard_root
from pytest_sabot.core.records import SESSIONS_DIR
from pytest_sabot.matrix.standard import Standard, load_standard


def session_manifests(
    out_dir: Path,
) -> tuple[list[SessionRecord], dict[Path, SabotDataError]]:
    """Every readable session manifest of an output directory (oldest first), and what is
    wrong with each one that does not read, by its file (a damaged manifest is named; it
    is fatal only to a reading of its own session)."""
    folder = out_dir / SESSIONS_DIR
    if not folder.is_dir():
        return [], {}
    found: list[SessionRecord] = []
    damaged: dict[Path, SabotDataError] = {}
    for path in sorted(folder.glob("*.json")):
        try:
            found.append(read_manifest(path))
        except SabotDataError as exc:
            damaged[path] = exc
    return found, damaged


def _latest_adapters(manifests: list[SessionRecord]) -> dict[str, tuple[str, AdapterRecord]]:
    """Framework -> (session, its adapter record), the newest session's record winning."""
    chosen: dict[str, tuple[str, AdapterRecord]] = {}
    for manifest in manifests:
        for record in manifest.adapters:
            chosen[record.framework] = (manifest.run_id, record)
    return chosen


def recorded_root_of(own: SessionRecord | None) -> str | None:
    """The standard root a session recorded (--sabot-root, SPEC I107), when no root is
    given: None for the shipped standard; a root that is no longer there is said."""
    if own is None or own.root is None:
        return None
    if not Path(own.root).is_dir():
        raise SabotDataError(
            f"sessions/{own.run_id}.json", "root",
            "the standard root the session ran with, still on this machine (or give "
            "--sabot-root)", own.root)
    return own.root


@contextmanager
def session_standard(
    out_dir: Path,
    wave: int | str,
    *,
    session: str | None,
    root: str | Path | None = None,
    rules: str | None = None,
) -> Iterator[Standard]:
    """The matrix of the session ``session`` recorded in ``out_dir``, loaded for as long as
    the block runs (the stand-ins of adapters not installed here are forgotten after)."""
    manifests, damaged = session_manifests(out_dir)
    own = next((m for m in manifests if m.run_id == session), None)
    mine = out_dir / SESSIONS_DIR / f"{session}.json"
    if own is None and mine in damaged:
        # Its root, its adapters and its outside row are in that file: without it the
        # records would be read against another matrix, so the reading stops here.
        raise damaged[mine]
    base = standard_root(root if root is not None else recorded_root_of(own))
    stood_in: list[str] = []
    try:
        for name, (run_id, record) in _latest_adapters(manifests).items():
            mapping = (out_dir / record.mapping) if record.kept else (base / record.mapping)
            if register_recorded(name, mapping, record.packages, run_id):
                stood_in.append(name)
        std = load_standard(wave, base, rules=rules)
        if own is not None and own.agent is not None:
            from pytest_sabot.trusted.sabot import NAME, agent_wave

            std = agent_wave(std, own.outside_row or NAME, target=own.agent)
        elif own is not None and own.outside_row is not None:
            from pytest_sabot.trusted.sabot import MCP_NAME, agent_wave

            std = agent_wave(std, MCP_NAME, "an MCP client") if own.outside_row == MCP_NAME \
                else agent_wave(std, own.outside_row)
        yield std
    finally:
        for name in stood_in:
            forget_recorded(name)
