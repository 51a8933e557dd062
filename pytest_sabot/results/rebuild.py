"""results.json built again from the records on disk, with the inputs an earlier
results.json recorded (selection, session, model, judge): offline, no model call. Used by
``sabot rescore`` and by a session that keeps a directory's board (SPEC I97, I98)."""

from __future__ import annotations

from pathlib import Path

from pytest_sabot.core.model_spec import parse_model
from pytest_sabot.matrix.standard import Standard
from pytest_sabot.results.adjudicate import Provenance
from pytest_sabot.results.build import ResultsFile, SessionInfo, build_results


def rebuild(
    original: ResultsFile,
    std: Standard,
    directory: Path,
    *,
    counted: dict[str, str] | None = None,
    session: SessionInfo | None = None,
    processes: int | None = 1,
) -> ResultsFile:
    """``original`` scored again from the records in ``directory`` under ``std``'s rules;
    ``counted`` and ``session`` replace the original's when given (a board kept up to date
    with a later session's records); ``processes`` as for ``build_results``."""
    sel = original.selection
    chosen = counted if counted is not None else original.counted
    reasons = {n.cell_id: (n.reason, n.detail) for n in sel.not_run}
    fresh = build_results(
        std,
        directory,
        selected_ids=sel.cell_ids or [c.cell_id for c in original.cells] + sel.missing
        + original.structural_zeros,
        pulled_in=sel.pulled_in,
        model=parse_model(original.model),
        upstream=original.upstream,
        downgrade_model=original.downgrade_model,
        judge_spec=original.judge_spec,
        judge=original.judge,
        spend=original.spend,
        extensions=original.extensions,
        session=session if session is not None else original.session,
        # ``counted`` names the very records to read (cell -> the session that made it),
        # each accepted under its own provenance when the board was built; only a file
        # written before the field is read by provenance.
        provenance=None if chosen else Provenance(
            original.model, original.registration_hash, original.rules
        ),
        not_run=reasons,
        counted=chosen,
        keyword=sel.keyword,
        markexpr=sel.markexpr,
        filters=sel.filters,
        versions=original.versions,
        processes=processes,
    )
    # The gates are the session's, as its exit status read them (SPEC I43): kept as recorded.
    return fresh if original.gates is None else fresh.model_copy(update={"gates": original.gates})
