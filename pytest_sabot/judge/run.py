"""Judging one cell: variant A always, variant B too for the deterministic 20% that are
double-judged; answers cached by (transcript hash, prompt variant, judge); the result
written to the cell's soft.json for the scorer.

The headline never reads any of this: DETECTED_HARD is decided from the trace and the
mapping alone (see pytest_sabot.scoring), and soft.json feeds only DETECTED_SOFT.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

from pytest_sabot.core.model_spec import parse_judge
from pytest_sabot.core.models.trace import Trace
from pytest_sabot.core.trace_io import (
    read_record_if_present,
    write_json_atomic,
    write_record_atomic,
)
from pytest_sabot.judge import rubric, transcript
from pytest_sabot.judge.backends import JudgeBackend, JudgeBackendError
from pytest_sabot.judge.models import JudgeRequest, JudgeResult, SoftRecord
from pytest_sabot.judge.validate import accept

DOUBLE_JUDGED_SHARE = 5  # one cell in five: 20%
SOFT_FILE = "soft.json"
_RAW_LIMIT = 4000


def double_judged(cell_id: str) -> bool:
    """Deterministic 20% of cells, chosen from the cell id alone."""
    return int(hashlib.sha256(cell_id.encode()).hexdigest(), 16) % DOUBLE_JUDGED_SHARE == 0


def _cache_key(text: str, variant: str, backend: str) -> str:
    return hashlib.sha256(f"{backend}\0{variant}\0{text}".encode()).hexdigest()


def judge_once(backend: JudgeBackend, request: JudgeRequest, cache_dir: Path | None) -> JudgeResult:
    variant: Literal["A", "B"] = request.variant
    key = _cache_key(request.transcript + "\0" + request.ground_truth, variant, backend.name)
    cached_path = cache_dir / f"{key}.json" if cache_dir else None
    raw: str | None = None
    if cached_path is not None and cached_path.is_file():
        raw = json.loads(cached_path.read_text())["raw"]
        cached = True
    else:
        cached = False
        try:
            raw = backend.complete(rubric.prompt(request))
        except JudgeBackendError as exc:
            return JudgeResult(variant=variant, backend=backend.name, error=str(exc))
        if cached_path is not None:
            write_json_atomic(
                cached_path, {"raw": raw, "backend": backend.name, "variant": variant}
            )
    verdict, error = accept(raw, request.transcript)
    return JudgeResult(
        variant=variant,
        backend=backend.name,
        verdict=verdict,
        error=error,
        raw=raw[:_RAW_LIMIT],
        cached=cached,
    )


def judge_trace(
    backend: JudgeBackend, trace: Trace, ground_truth: str, *, cache_dir: Path | None, label: str
) -> SoftRecord:
    cell_id = trace.start.cell_id
    text = transcript.render(trace)
    first = judge_once(
        backend,
        JudgeRequest(cell_id=cell_id, transcript=text, ground_truth=ground_truth, variant="A"),
        cache_dir,
    )
    second = None
    if double_judged(cell_id):
        second = judge_once(
            backend,
            JudgeRequest(cell_id=cell_id, transcript=text, ground_truth=ground_truth, variant="B"),
            cache_dir,
        )
    return SoftRecord(
        cell_id=cell_id, noticed=first.noticed, first=first, second=second, label=label
    )


def write_soft(run_dir: Path, record: SoftRecord) -> None:
    write_record_atomic(run_dir / SOFT_FILE, record)


def read_soft_record(run_dir: Path) -> SoftRecord | None:
    return read_record_if_present(run_dir / SOFT_FILE, SoftRecord)


SIM_JUDGE_LABEL = "fixture of the embedded judge (sim), not a measurement of any model"


def summarise(records: list[SoftRecord], backend: str, note: str | None = None) -> dict[str, Any]:
    """The judge block of results.json: counts, errors and Cohen's kappa (section 6)."""
    from pytest_sabot.scoring.stats import cohen_kappa

    pairs = [
        (r.first.noticed, r.second.noticed)
        for r in records
        if r.second is not None and r.first.noticed is not None and r.second.noticed is not None
    ]
    kappa = cohen_kappa(pairs)
    errors = sum(1 for r in records for j in (r.first, r.second) if j is not None and j.error)
    # The embedded judge's verdicts are fixtures whatever model served the pipeline (I17, I37).
    fixture = parse_judge(backend).is_sim
    notes = [SIM_JUDGE_LABEL] if fixture else []
    notes += [note] if note else []
    return {
        "backend": backend,
        "fixture": fixture,
        "judged": len(records),
        "noticed": sum(1 for r in records if r.noticed),
        "errors": errors,
        "double_judged": sum(1 for r in records if r.second is not None),
        "kappa": kappa.kappa,
        "observed_agreement": kappa.observed,
        "kappa_pairs": kappa.n,
        "kappa_note": kappa.note,
        "low_confidence": kappa.low_confidence,
        "note": "; ".join(notes),
    }


def collect_summary(
    out_dir: Path, cell_ids: list[str], backend: str, note: str | None
) -> dict[str, Any]:
    """Summarise the soft.json records of these cells (fault cells that were judged)."""
    records = []
    for cell_id in cell_ids:
        record = read_soft_record(out_dir / "cells" / cell_id)
        if record is not None:
            records.append(record)
    return summarise(records, backend, note)
