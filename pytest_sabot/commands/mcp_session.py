"""What a ``sabot mcp`` session leaves in its output directory besides the cell's record:
a session manifest, and the row's results (results.json, RESULTS.md, report.html) as any
session of a wave leaves them (SPEC I154).

Each ``sabot mcp`` invocation serves one cell and is one session. The results describe
every cell of the MCP client's row recorded in the directory so far (the invocation's own
and those of the earlier ones, as ``--sabot-resume`` would), so serving a baseline and then
its fault cells builds up one row. The manifest records the row that replaced the wave's
(``mcp_client``) and its adapter, so ``sabot rescore``, ``report``, ``inspect`` and
``export`` read the directory from its records alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_sabot.core.models.cells import Cell
    from pytest_sabot.matrix.standard import Standard
    from pytest_sabot.results import ResultsFile


def recorded_cells(std: Standard, out: Path, model: str) -> list[Cell]:
    """The row's cells that hold a finished record in ``out`` made under this session's
    model, matrix and rules (registry order): a record of another provenance is not this
    row's and is left out of its results, never scored with it."""
    from pytest_sabot.results.adjudicate import Provenance, read_record

    mine = Provenance(model, std.registration_hash(), std.rules.version)
    chosen = []
    for cell in std.cells:
        record = read_record(out, cell.id)
        if record.kind not in ("run", "not_run") or record.provenance is None:
            continue
        if mine.difference(record.provenance) is None:
            chosen.append(cell)
    return chosen


def write_session(
    std: Standard, out: Path, *, run_id: str, started: str, model: str
) -> ResultsFile:
    """Write the session's manifest and the row's results; the results written."""
    from pytest_sabot import __version__
    from pytest_sabot.core import manifest as manifest_mod
    from pytest_sabot.core.frameworks import installed_versions
    from pytest_sabot.core.model_spec import parse_model
    from pytest_sabot.core.records import now_iso
    from pytest_sabot.core.trace_io import write_text_atomic
    from pytest_sabot.report.render import markdown
    from pytest_sabot.results import build_results, write_results
    from pytest_sabot.results.adjudicate import Provenance
    from pytest_sabot.results.build import SessionInfo
    from pytest_sabot.trusted.sabot import MCP_NAME

    cells = recorded_cells(std, out, model)
    ids = [c.id for c in cells]
    ended = now_iso()
    session = SessionInfo(run_id=run_id, mode="resume", status="complete", detail="",
                          started=started, ended=ended)
    results = build_results(
        std, out, selected_ids=ids, model=parse_model(model), session=session,
        provenance=Provenance(model, std.registration_hash(), std.rules.version),
    )
    write_results(results, out)
    write_text_atomic(out / "RESULTS.md", markdown(results))
    record = manifest_mod.SessionRecord(
        run_id=run_id,
        tool=f"pytest-sabot {__version__}",
        wave=std.wave.wave,
        rules=std.rules.version,
        wave_rules=std.wave.rules,
        model=model,
        judge="sim",
        registration_hash=std.registration_hash(),
        versions=installed_versions(),
        mode="resume",
        started=started,
        ended=ended,
        status="complete",
        selection=manifest_mod.SessionSelection(cell_ids=ids),
        recorded=results.selection.recorded,
        not_run={n.cell_id: n.reason for n in results.selection.not_run},
        matrix=std.wave.name or f"wave{std.wave.wave}",
        root=manifest_mod.recorded_root(std.root),
        outside_row=MCP_NAME,
        adapters=manifest_mod.keep_adapters(out, run_id, std.root, std.wave.frameworks),
    )
    manifest_mod.write_manifest(out, record)
    _write_html(out)
    return results


def _write_html(out: Path) -> None:
    """report.html beside results.json; a rendering failure is said, never fatal."""
    import sys

    from pytest_sabot.report.html import write_results_html

    try:
        write_results_html(out)
    except Exception as exc:  # the results are written; the page is a rendering of them
        print(f"sabot mcp: report.html could not be written ({exc})", file=sys.stderr)
