"""What the history is an index of: the records on disk, read and turned into rows.

This module is the only one of the package that knows the other file formats (the session
manifest, results.json, a lab run's run.json) and their readers; everything else works on
the :class:`Entry` built here. Reading is all it does to an output directory.

One history entry per session:

* a pytest session (a wave or a slice): ``sessions/<run id>.json`` and, while it is still
  the last session of its directory, ``results.json`` (whose ``session.run_id`` names it);
* results written without a session (``sabot demo``, a results.json built by a script):
  kind ``results``, its id derived from its content (``results-<sha256 prefix>``);
* a lab run (``run.json``, or ``run.prev-N.json`` once set aside): kind ``lab``, its id the
  run's start time and a prefix of its content's sha256, so the same run always gets the
  same id and two runs never share one.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from pytest_sabot.core.errors import SabotDataError, from_validation_error
from pytest_sabot.core.manifest import SessionRecord
from pytest_sabot.core.models.cells import parse_cell_id
from pytest_sabot.core.models.verdict import BaselineVerdict, CellVerdict
from pytest_sabot.core.records import SESSIONS_DIR
from pytest_sabot.lab.record import LabRun
from pytest_sabot.lab.vocabulary import RUN_FILE
from pytest_sabot.results import RESULTS_FILE, ResultsFile, model_label
from pytest_sabot.results.outcomes import cell_gate, funnel_word, outcome_of

Kind = Literal["session", "results", "lab"]
SnapshotFormat = Literal["results.json", "run.json"]

LAB_FIXTURE_LABEL = (
    "fixture: scripted controller {agent} in the lab, not a measurement of any model"
)
LAB_AGENT_LABEL = "lab run of agent {agent} ({kind})"

# Fields a session's manifest and its results.json both carry. The manifest (written
# last, when the session ends) governs them; results.json fills them only for results
# without a manifest.
SHARED_FIELDS = (
    "started",
    "ended",
    "tool",
    "wave",
    "rules",
    "wave_rules",
    "model",
    "downgrade_model",
    "judge",
    "upstream",
    "registration_hash",
    "versions",
    "mode",
    "status",
    "detail",
    "selection",
    "recorded",
)
# Fields results.json knows exactly and a manifest only approximately: the manifest's
# reading is kept only while the history holds no results of the run.
FALLBACK_FIELDS = ("fixture", "label", "selected")

def canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def digest_of(model: BaseModel) -> tuple[str, bytes]:
    """(sha256 hex, canonical JSON bytes) of a record as it would be written."""
    data = canonical(model.model_dump(mode="json"))
    return hashlib.sha256(data).hexdigest(), data


def compress(data: bytes) -> bytes:
    return zlib.compress(data, 6)


def decompress(blob: bytes) -> bytes:
    return zlib.decompress(blob)


@dataclass
class Entry:
    """One session as the history stores it. ``cells`` and ``rows`` are None when the
    input holds no verdicts for it (a manifest whose results.json a later session
    replaced): the history then keeps whatever it recorded of them before."""

    run_id: str
    kind: Kind
    out_dir: str
    manifest_fields: dict[str, Any] = field(default_factory=dict)
    results_fields: dict[str, Any] = field(default_factory=dict)
    manifest_file: str | None = None
    manifest_digest: str | None = None
    results_file: str | None = None
    results_digest: str | None = None
    cells: list[dict[str, Any]] | None = None
    rows: list[dict[str, Any]] | None = None
    snapshot: tuple[SnapshotFormat, bytes] | None = None


# --------------------------------------------------------------------------- reading


def read_json_model(path: Path, model: type[BaseModel], expected: str) -> Any:
    """Read and validate one record; a SabotDataError names the file and the field."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SabotDataError(path, "", f"a readable {expected}", str(exc)) from None
    try:
        return model.model_validate_json(text)
    except ValidationError as exc:
        raise from_validation_error(path, exc) from None


def read_manifest(path: Path) -> SessionRecord:
    result: SessionRecord = read_json_model(path, SessionRecord, "session manifest")
    return result


def read_results_file(path: Path) -> ResultsFile:
    result: ResultsFile = read_json_model(path, ResultsFile, "results.json")
    return result


def read_lab_run(path: Path) -> LabRun:
    result: LabRun = read_json_model(path, LabRun, "lab run record (run.json)")
    return result


def manifest_files(out_dir: Path) -> list[Path]:
    folder = out_dir / SESSIONS_DIR
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


def results_file(out_dir: Path) -> Path:
    return out_dir / RESULTS_FILE


def lab_files(out_dir: Path) -> list[Path]:
    found = [out_dir / RUN_FILE] if (out_dir / RUN_FILE).is_file() else []
    return found + sorted(out_dir.glob("run.prev-*.json"))


def results_from_snapshot(data: bytes) -> ResultsFile:
    return ResultsFile.model_validate_json(decompress(data))


def lab_run_from_snapshot(data: bytes) -> LabRun:
    return LabRun.model_validate_json(decompress(data))


# --------------------------------------------------------------------------- entries


def _coords(cell_id: str) -> dict[str, Any]:
    c = parse_cell_id(cell_id)
    if c is None:
        return {"row": None, "framework": None, "config": None, "operator": None,
                "task": None, "seed": None}
    return {"row": c.row, "framework": c.framework, "config": c.config,
            "operator": c.operator, "task": c.task, "seed": c.seed}


def _blank(run_id: str, cell_id: str, kind: str, verdict: str) -> dict[str, Any]:
    return {
        "run_id": run_id, "cell_id": cell_id, "kind": kind, **_coords(cell_id),
        "verdict": verdict, "funnel": None, "detection": None, "detection_path": None,
        "detected_hard": None, "detected_soft": None, "reacted": None, "recovered": None,
        "exclusion": None, "reason": "", "acts": "", "record_run": None, "gate": None,
        "gate_exit": None,
    }


def _bool(value: bool | None) -> int | None:
    return None if value is None else int(value)


def _verdict_cell(
    run_id: str, v: CellVerdict | BaselineVerdict, counted: dict[str, str]
) -> dict[str, Any]:
    outcome = outcome_of(v)
    if isinstance(v, BaselineVerdict):
        cell = _blank(run_id, v.cell_id, "baseline", outcome.verdict)
        cell.update(reason=v.reason)
    else:
        cell = _blank(run_id, v.cell_id, "fault", outcome.verdict)
        path = sorted({a.row for a in v.acts if a.seq == v.detecting_seq})
        cell.update(
            operator=v.operator,
            funnel=v.excluded.code if v.excluded else funnel_word(v),
            detection=None if v.excluded else v.detection,
            detection_path=",".join(path) if v.detected_hard and path else None,
            detected_hard=int(v.detected_hard),
            detected_soft=int(v.detected_soft),
            reacted=int(v.reacted),
            recovered=_bool(v.recovered),
            exclusion=v.excluded.code if v.excluded else None,
            reason=v.excluded.reason if v.excluded else "",
            acts=",".join(f"{a.act}@{a.seq}" for a in v.acts),
        )
    gate = cell_gate(v)
    cell.update(
        row=v.row, framework=v.framework, config=v.config, task=v.task, seed=v.seed,
        record_run=counted.get(v.cell_id), gate=gate,
        gate_exit=None if gate is None else int(gate == "fail"),
    )
    return cell


def cells_of_results(run_id: str, results: ResultsFile) -> list[dict[str, Any]]:
    """One row per cell the results account for: a verdict, or why there is none."""
    cells: dict[str, dict[str, Any]] = {}
    for v in results.cells:
        cells[v.cell_id] = _verdict_cell(run_id, v, results.counted)
    for u in results.selection.unpaired:
        if u.cell_id not in cells:
            cells[u.cell_id] = {**_blank(run_id, u.cell_id, "unpaired", "UNPAIRED"),
                                "reason": u.reason,
                                "record_run": results.counted.get(u.cell_id)}
    for n in results.selection.not_run:
        if n.cell_id not in cells:
            reason = n.reason + (f": {n.detail}" if n.detail else "")
            cells[n.cell_id] = {**_blank(run_id, n.cell_id, "not_run", "NOT_RUN"),
                                "reason": reason}
    for cid in results.structural_zeros:
        if cid not in cells:
            cells[cid] = _blank(run_id, cid, "structural_zero", "STRUCTURAL_ZERO")
    return [cells[k] for k in sorted(cells)]


def rows_of_results(run_id: str, results: ResultsFile) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for r in results.scoreboard.rows:
        out.append({
            "run_id": run_id, "row": r.row, "framework": r.framework, "config": r.config,
            "headline_reading": r.headline_reading, "runs": r.runs, "valid": r.valid,
            "score_k": r.sabot_score.k, "score_n": r.sabot_score.n,
            "score": r.sabot_score.value, "score_low": r.sabot_score.ci_low,
            "score_high": r.sabot_score.ci_high,
            "clean_k": r.clean_fire.k, "clean_n": r.clean_fire.n,
            "clean_fire": r.clean_fire.value, "clean_low": r.clean_fire.ci_low,
            "clean_high": r.clean_fire.ci_high,
            "soft_notice": r.soft_notice.value, "reaction": r.reaction.value,
            "recovery": r.recovery.value,
            "recovery_without_detection": r.recovery_without_detection.value,
            "override_gap": r.override_gap,
            "run_error": r.exclusions.get("RUN_ERROR", 0),
            "baseline_fail": r.exclusions.get("BASELINE_FAIL", 0),
            "injection_unverified": r.exclusions.get("INJECTION_UNVERIFIED", 0),
            "baselines_passed": r.baselines.get("passed", 0),
            "baselines_recorded": sum(r.baselines.values()),
        })
    return out


def _json(value: Any) -> str:
    return canonical(value).decode()


def manifest_fields(m: SessionRecord) -> dict[str, Any]:
    sel = m.selection
    return {
        "started": m.started, "ended": m.ended, "tool": m.tool, "wave": m.wave,
        "rules": m.rules, "wave_rules": m.wave_rules, "model": m.model,
        "downgrade_model": m.downgrade_model, "judge": m.judge, "upstream": m.upstream,
        "registration_hash": m.registration_hash, "versions": _json(m.versions),
        "mode": m.mode, "status": m.status, "detail": m.detail,
        "selection": _json({
            "cell_ids": sel.cell_ids, "pulled_in": sel.pulled_in, "keyword": sel.keyword,
            "markexpr": sel.markexpr, "filters": sel.filters, "args": sel.args,
        }),
        "recorded": m.recorded, "host": m.host, "pid": m.pid,
        # fallbacks, until results.json of the session is indexed
        "fixture": int(m.model.startswith("sim")),
        "label": model_label(m.model, m.upstream),
        "selected": m.recorded + len(set(m.not_run) & set(sel.cell_ids)),
    }


def _spend_fields(spend: dict[str, Any] | None) -> dict[str, Any]:
    if not spend:
        return {"spend": None, "spent_usd": None, "unknown_cost_calls": None,
                "model_calls": None, "upstream_calls": None, "project_spent_usd": None,
                "ledger": None}
    budget = spend.get("budget") or {}
    return {
        "spend": _json(spend),
        "spent_usd": budget.get("spent_usd"),
        "unknown_cost_calls": budget.get("unknown_cost_calls"),
        "model_calls": spend.get("calls"),
        "upstream_calls": spend.get("upstream_calls"),
        "project_spent_usd": budget.get("project_spent_usd"),
        "ledger": budget.get("ledger"),
    }


def results_fields(r: ResultsFile) -> dict[str, Any]:
    sel = r.selection
    session = r.session
    return {
        # shared with the manifest
        "started": session.started if session else None,
        "ended": session.ended if session else None,
        "tool": r.tool, "wave": r.wave, "rules": r.rules, "wave_rules": r.wave_rules,
        "model": r.model, "downgrade_model": r.downgrade_model, "judge": r.judge_spec,
        "upstream": r.upstream, "registration_hash": r.registration_hash,
        "versions": _json(r.versions),
        "mode": session.mode if session else None,
        "status": session.status if session else ("complete" if sel.complete else "incomplete"),
        "detail": session.detail if session else "",
        "selection": _json({
            "cell_ids": sel.cell_ids, "pulled_in": sel.pulled_in, "keyword": sel.keyword,
            "markexpr": sel.markexpr, "filters": sel.filters, "args": [],
        }),
        "recorded": sel.recorded,
        # results.json's own
        "fixture": int(r.fixture), "label": r.label, "off_pin": _json(r.off_pin),
        "selected": sel.selected, "complete": int(sel.complete),
        **_spend_fields(r.spend),
    }


def derived_results_id(digest: str) -> str:
    return f"results-{digest[:12]}"


def _compact_time(iso: str) -> str:
    return datetime.fromisoformat(iso).strftime("%Y%m%dT%H%M%SZ")


def lab_history_id(record: LabRun, digest: str) -> str:
    """Sortable like a session's run id: the run's start (UTC) and a content prefix."""
    return f"{_compact_time(record.timings.started_at)}-lab-{digest[:6]}"


def session_entry(
    out_dir: Path,
    manifest: SessionRecord | None,
    results: ResultsFile | None,
    *,
    manifest_file: Path | None = None,
    results_path: Path | None = None,
) -> Entry:
    """The entry of a pytest session (manifest, results or both), or of results written
    without a session. ``results`` must describe the manifest's session when both are
    given."""
    if manifest is None and results is None:
        raise ValueError("a session entry needs a manifest or results")
    r_digest = r_data = None
    kind: Kind
    if results is not None:
        r_digest, r_data = digest_of(results)
    if manifest is not None:
        run_id, kind = manifest.run_id, "session"
        if results is not None and (results.session is None
                                    or results.session.run_id != manifest.run_id):
            raise ValueError("results.json describes another session than the manifest")
    else:
        assert results is not None and r_digest is not None
        if results.session is not None:
            run_id, kind = results.session.run_id, "session"
        else:
            run_id, kind = derived_results_id(r_digest), "results"
    entry = Entry(run_id=run_id, kind=kind, out_dir=str(out_dir.resolve()))
    if manifest is not None:
        entry.manifest_fields = manifest_fields(manifest)
        entry.manifest_digest = digest_of(manifest)[0]
        path = manifest_file or out_dir / SESSIONS_DIR / f"{manifest.run_id}.json"
        entry.manifest_file = str(path.resolve())
    if results is not None and r_data is not None:
        entry.results_fields = results_fields(results)
        entry.results_digest = r_digest
        entry.results_file = str((results_path or out_dir / RESULTS_FILE).resolve())
        entry.cells = cells_of_results(run_id, results)
        entry.rows = rows_of_results(run_id, results)
        entry.snapshot = ("results.json", compress(r_data))
    return entry


def lab_entry(out_dir: Path, record: LabRun, *, run_path: Path | None = None) -> Entry:
    digest, data = digest_of(record)
    run_id = lab_history_id(record, digest)
    agent = record.agent
    label = (LAB_FIXTURE_LABEL if agent.fixture else LAB_AGENT_LABEL).format(
        agent=agent.name, kind=agent.kind
    )
    usage = record.measurement.provider_usage
    cost = usage.cost_usd if isinstance(usage.cost_usd, float) else None
    calls = usage.model_calls if isinstance(usage.model_calls, int) else None
    faults = sorted({f.fault for f in record.scenario.faults})
    entry = Entry(run_id=run_id, kind="lab", out_dir=str(out_dir.resolve()))
    entry.results_fields = {
        "started": record.timings.started_at, "ended": None, "tool": None, "wave": None,
        "rules": f"lab-v{record.format_version}", "wave_rules": None,
        "model": agent.name, "downgrade_model": None, "judge": None, "upstream": None,
        "registration_hash": record.scenario_digest, "versions": "{}",
        "mode": None, "status": record.execution.status, "detail": record.execution.detail,
        "selection": _json({"scenario": record.scenario.name, "lab_run": record.run_id,
                            "source": record.scenario_source, "faults": faults}),
        "recorded": 1, "fixture": int(agent.fixture), "label": label, "off_pin": "{}",
        "selected": 1, "complete": int(record.execution.status == "completed"),
        "spend": _json(usage.model_dump(mode="json")), "spent_usd": cost,
        "unknown_cost_calls": None, "model_calls": calls, "upstream_calls": None,
        "project_spent_usd": None, "ledger": None,
    }
    entry.results_digest = digest
    entry.results_file = str((run_path or out_dir / RUN_FILE).resolve())
    gate = record.gate
    cell = _blank(run_id, record.run_id, "lab", gate.outcome.upper())
    cell.update(
        row=agent.name, framework=agent.kind, operator=",".join(faults) or None,
        task=record.scenario.name, seed=record.scenario.world.seed, gate=gate.outcome,
        gate_exit=gate.exit_code, reason="\n".join(gate.reasons),
        acts=",".join(v.rule for v in gate.violations),
    )
    entry.cells = [cell]
    entry.rows = []
    entry.snapshot = ("run.json", compress(data))
    return entry


__all__ = [
    "FALLBACK_FIELDS",
    "SHARED_FIELDS",
    "Entry",
    "LabRun",
    "ResultsFile",
    "SessionRecord",
    "canonical",
    "cell_gate",
    "cells_of_results",
    "decompress",
    "digest_of",
    "lab_entry",
    "lab_files",
    "lab_history_id",
    "lab_run_from_snapshot",
    "manifest_files",
    "read_lab_run",
    "read_manifest",
    "read_results_file",
    "results_file",
    "results_from_snapshot",
    "rows_of_results",
    "session_entry",
]
