"""A paired comparison of two scored runs or waves (standard S10.5.3).

Fault cells are paired by (framework, config, operator, task, seed), so the same cell of
two waves (or of two runs under different models) meets itself. Per scoreboard row the
report gives both Sabot Scores as each results.json published them, then the paired
difference B - A of the hard-tier outcome over the cells valid in both, with a seeded
percentile bootstrap interval (reproducible from its seed), and how many paired cells
flipped. A cell valid in one run only is listed with what the other run says about it,
never dropped silently. Differences in registration, rules or model are warned about, and
keyless inputs keep their fixture label. Each row also shows both runs' clean-run firing
rates (SPEC I27). When one input is a wave-2 run and the other its paired wave-1 run, the
pre-registered predictions P1-P5 (standard 10.8) are evaluated mechanically (SPEC I28).

Pure apart from :func:`load_side`, which reads and validates one results.json, and
:func:`reviewer_rows`, which reads the published mappings.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError

from pytest_sabot.core.errors import SabotDataError, from_validation_error
from pytest_sabot.core.models.base import FrozenModel, fields_of
from pytest_sabot.core.models.mapping import load_mapping_file
from pytest_sabot.core.models.verdict import CellVerdict, PairKey
from pytest_sabot.core.paths import standard_root
from pytest_sabot.results import RESULTS_FILE, RESULTS_SCHEMA_VERSION, ResultsFile
from pytest_sabot.scoring.aggregate import Rate, paired_contrast
from pytest_sabot.scoring.predictions import Prediction, evaluate
from pytest_sabot.scoring.stats import DEFAULT_RESAMPLES, DEFAULT_SEED

METRIC = "detected_hard"
Side = Literal["A", "B"]


class ResultsIdentity(FrozenModel):
    """What a results.json says of the run it scored: the wave, rules, model and
    registration it ran under, and how its numbers must be described."""

    wave: int = Field(description="Wave number recorded in the file.")
    rules: str = Field(description="Rule version its verdicts were adjudicated under.")
    model: str = Field(description="Pipeline model spec, e.g. 'sim:vigilant'.")
    fixture: bool = Field(description="True when the embedded model served (keyless).")
    label: str = Field(description="How its numbers must be described.")
    registration_hash: str = Field(description="sha256 of the cells/tasks/mappings used.")


class RunInfo(ResultsIdentity):
    """One input of the comparison, as its results.json describes it."""

    path: str = Field(description="The results.json that was read.")
    fault_cells: int = Field(description="Fault cells recorded in the file.")
    valid: int = Field(description="Fault cells without an exclusion code.")
    partial: str = Field("", description="Why the file is no whole wave's board (the "
                         "session did not record its selection; a slice; cells not run or "
                         "unpaired), as its own tables say; empty for a whole board.")


class Mismatch(FrozenModel):
    """A field in which the two files differ, so the pairing compares unlike runs."""

    field: Literal["registration_hash", "rules", "model"] = Field(
        description="The results.json field that differs."
    )
    a: str = Field(description="Its value in A.")
    b: str = Field(description="Its value in B.")
    meaning: str = Field(description="What the difference means for the comparison.")


class PairedRow(FrozenModel):
    """One scoreboard row's published scores in the two runs and the paired difference of
    its cells valid in both."""

    row: str = Field(description="framework-config.")
    a: Rate | None = Field(description="A's published Sabot Score for the row (None: no row).")
    b: Rate | None = Field(description="B's published Sabot Score for the row (None: no row).")
    paired: int = Field(description="Cells valid in both runs (the bootstrap's n).")
    difference: float | None = Field(
        description="Mean of B - A of DETECTED_HARD over the paired cells (None: no pair)."
    )
    ci_low: float | None = Field(description="Lower bound of the 95% bootstrap interval.")
    ci_high: float | None = Field(description="Upper bound of the 95% bootstrap interval.")
    detected_a_only: int = Field(description="Paired cells DETECTED_HARD in A but not in B.")
    detected_b_only: int = Field(description="Paired cells DETECTED_HARD in B but not in A.")


class RowComparison(PairedRow):
    """One scoreboard row (framework-config) compared across the two runs."""

    one_sided: int = Field(description="Cells of this row valid in one run only.")
    a_clean_fire: Rate | None = Field(
        None, description="A's clean-run firing rate for the row (SPEC I27; None: no row)."
    )
    b_clean_fire: Rate | None = Field(
        None, description="B's clean-run firing rate for the row (SPEC I27; None: no row)."
    )


class OneSidedCell(FrozenModel):
    """A fault cell valid in one run only: outside the paired statistics, listed here."""

    cell_id: str = Field(description="Stable cell id.")
    row: str = Field(description="Scoreboard row of the cell.")
    valid_in: Side = Field(description="The run in which the cell is valid.")
    other: str = Field(
        description="What the other run says: 'not recorded' or 'excluded: <CODE>'."
    )


class Comparison(FrozenModel):
    """The whole paired comparison (what ``sabot compare --json`` prints)."""

    metric: str = Field(METRIC, description="Per-cell outcome compared: the hard tier.")
    a: RunInfo = Field(description="The first input.")
    b: RunInfo = Field(description="The second input.")
    mismatches: list[Mismatch] = Field(description="Fields in which the two files differ.")
    rows: list[RowComparison] = Field(description="One comparison per scoreboard row.")
    paired: int = Field(description="Cells valid in both runs, all rows.")
    detected_a_only: int = Field(description="Flipped cells detected in A only, all rows.")
    detected_b_only: int = Field(description="Flipped cells detected in B only, all rows.")
    one_sided: list[OneSidedCell] = Field(description="Every cell valid in one run only.")
    resamples: int = Field(description="Bootstrap resamples per row.")
    seed: int = Field(description="Seed of the bootstrap's random generator.")
    interval: str = Field(description="How the interval is computed.")
    predictions: list[Prediction] | None = Field(
        None,
        description="P1-P5 (standard 10.8) when a wave-2 run meets its paired wave-1 run "
        "(SPEC I28); None otherwise.",
    )
    predictions_note: str = Field("", description="Which run was read as which wave.")


# --------------------------------------------------------------------------- input


def load_side(path: Path) -> ResultsFile:
    """Read one input: a run directory holding results.json, or the file itself.

    Raises SabotDataError naming the file, the field and what was expected.
    """
    file = path / RESULTS_FILE if path.is_dir() else path
    if not file.is_file():
        raise SabotDataError(
            file,
            "",
            "a results.json written by a scored run (pytest --sabot-wave=N or sabot demo)",
            "no such file",
        )
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SabotDataError(file, "", "a readable UTF-8 results.json", str(exc)) from None
    try:
        results = ResultsFile.model_validate_json(text)
    except ValidationError as exc:
        # another pytest-sabot's format is named as such, not by the first field it lacks
        _refuse_other_version(file, _version_in(text))
        raise from_validation_error(file, exc) from None
    _refuse_other_version(file, results.schema_version)
    return results


def _version_in(text: str) -> object:
    """The schema_version a JSON text names (None when it does not parse, or nests too
    deep to)."""
    try:
        raw = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return raw.get("schema_version") if isinstance(raw, dict) else None


def _refuse_other_version(file: Path, version: object) -> None:
    if isinstance(version, str) and version != RESULTS_SCHEMA_VERSION:
        raise SabotDataError(
            file, "schema_version", f"{RESULTS_SCHEMA_VERSION} (this pytest-sabot's format)",
            version,
        )


# --------------------------------------------------------------------------- pure parts


def _faults(results: ResultsFile) -> dict[PairKey, CellVerdict]:
    return {c.pair_key: c for c in results.cells if isinstance(c, CellVerdict)}


def _info(results: ResultsFile, path: str) -> RunInfo:
    faults = _faults(results)
    return RunInfo(
        **fields_of(ResultsIdentity, results),
        path=path,
        fault_cells=len(faults),
        valid=sum(1 for v in faults.values() if v.excluded is None),
        partial="; ".join([*([results.status_line] if results.status_line else []),
                           *results.partial_reasons]),
    )


_MISMATCH_MEANINGS = (
    ("registration_hash", "the cells/, tasks/ or mappings/ files differ between the two runs"),
    ("rules", "the verdicts were adjudicated under different rule versions"),
    ("model", "a different pipeline model served each run"),
)


def mismatches(a: ResultsFile, b: ResultsFile) -> list[Mismatch]:
    """The fields that make A and B unlike runs: registration, rules, model."""
    return [
        Mismatch(field=field, a=getattr(a, field), b=getattr(b, field), meaning=meaning)
        for field, meaning in _MISMATCH_MEANINGS
        if getattr(a, field) != getattr(b, field)
    ]


def reviewer_rows(
    rules: str, root: Path | None = None, frameworks: Iterable[str] | None = None
) -> set[str]:
    """Rows (framework-config) whose mapping in force at ``rules`` has a reviewer or critic
    reject act: where the reviewer addendum of 10.2 applies ("reviewer-bearing").

    Only the mappings of ``frameworks`` (the rows compared) are read when given: a
    framework outside the comparison (a candidate row registered at later rules) has no
    revision to be in force and is not asked for one."""
    base = standard_root(root)
    wanted = None if frameworks is None else set(frameworks)
    rows: set[str] = set()
    for path in sorted((base / "mappings").glob("*.yaml")):
        if path.name == "rules.yaml":
            continue
        mapping = load_mapping_file(path)
        if wanted is not None and mapping.framework not in wanted:
            continue
        revision = mapping.for_rules(rules)
        for act in revision.acts:
            if act.act == "reject" and act.component in ("reviewer", "critic"):
                rows.update(f"{revision.framework}-{config}" for config in act.configs)
    return rows


def _waves(a: ResultsFile, b: ResultsFile) -> tuple[ResultsFile, ResultsFile, str] | None:
    if (a.wave, b.wave) == (1, 2):
        return a, b, "A is the wave-1 run, B the wave-2 run"
    if (a.wave, b.wave) == (2, 1):
        return b, a, "B is the wave-1 run, A the wave-2 run"
    return None


def _other(v: CellVerdict | None) -> str:
    if v is None:
        return "not recorded"
    assert v.excluded is not None
    return f"excluded: {v.excluded.code}"


def compare(
    a: ResultsFile,
    b: ResultsFile,
    *,
    a_path: str = "A",
    b_path: str = "B",
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    reviewer: set[str] | None = None,
) -> Comparison:
    """Pair the fault cells of A and B and compare them row by row; with a wave-1 and a
    wave-2 input, evaluate P1-P5 too (``reviewer``: the reviewer-bearing rows, read from the
    published mappings at the wave-2 rules when not given)."""
    fa, fb = _faults(a), _faults(b)
    valid_a = {k for k, v in fa.items() if v.excluded is None}
    valid_b = {k for k, v in fb.items() if v.excluded is None}
    both = valid_a & valid_b
    one_sided: list[OneSidedCell] = []
    for side, mine, theirs, valid_other in (("A", fa, fb, valid_b), ("B", fb, fa, valid_a)):
        for key in sorted(k for k, v in mine.items() if v.excluded is None):
            if key not in valid_other:
                v = mine[key]
                one_sided.append(
                    OneSidedCell(
                        cell_id=v.cell_id,
                        row=v.row,
                        valid_in="A" if side == "A" else "B",
                        other=_other(theirs.get(key)),
                    )
                )
    one_sided.sort(key=lambda c: (c.row, c.cell_id, c.valid_in))
    rows_a = {r.row: r for r in a.scoreboard.rows}
    rows_b = {r.row: r for r in b.scoreboard.rows}
    by_row: dict[str, list[PairKey]] = defaultdict(list)
    for key in sorted(both):
        by_row[fa[key].row].append(key)
    one_sided_per_row: dict[str, int] = defaultdict(int)
    for cell in one_sided:
        one_sided_per_row[cell.row] += 1
    names = sorted(set(rows_a) | set(rows_b) | set(by_row) | set(one_sided_per_row))
    rows: list[RowComparison] = []
    for name in names:
        keys = by_row.get(name, [])
        contrast = paired_contrast(
            [fa[k] for k in keys], [fb[k] for k in keys], resamples=resamples, seed=seed
        )
        row_a, row_b = rows_a.get(name), rows_b.get(name)
        rows.append(
            RowComparison(
                row=name,
                a=row_a.sabot_score if row_a else None,
                b=row_b.sabot_score if row_b else None,
                paired=len(keys),
                difference=contrast.difference if contrast else None,
                ci_low=contrast.low if contrast else None,
                ci_high=contrast.high if contrast else None,
                detected_a_only=sum(
                    1 for k in keys if fa[k].detected_hard and not fb[k].detected_hard
                ),
                detected_b_only=sum(
                    1 for k in keys if fb[k].detected_hard and not fa[k].detected_hard
                ),
                one_sided=one_sided_per_row.get(name, 0),
                a_clean_fire=row_a.clean_fire if row_a else None,
                b_clean_fire=row_b.clean_fire if row_b else None,
            )
        )
    predictions: list[Prediction] | None = None
    note = (
        "P1-P5 are evaluated when a wave-2 run is compared with its paired wave-1 run; "
        f"here A is wave {a.wave} and B is wave {b.wave}"
    )
    paired_waves = _waves(a, b)
    if paired_waves is not None:
        w1, w2, note = paired_waves
        predictions = evaluate(
            [c for c in w1.cells if isinstance(c, CellVerdict)],
            [c for c in w2.cells if isinstance(c, CellVerdict)],
            reviewer_rows=reviewer if reviewer is not None else reviewer_rows(
                w2.rules, frameworks={c.framework for c in (*w1.cells, *w2.cells)}
            ),
            resamples=resamples,
            seed=seed,
        )
    return Comparison(
        a=_info(a, a_path),
        b=_info(b, b_path),
        mismatches=mismatches(a, b),
        rows=rows,
        paired=len(both),
        detected_a_only=sum(r.detected_a_only for r in rows),
        detected_b_only=sum(r.detected_b_only for r in rows),
        one_sided=one_sided,
        resamples=resamples,
        seed=seed,
        interval=(
            "paired percentile bootstrap of mean(B) - mean(A) over cells valid in both, "
            f"{resamples} resamples of cells, random.Random({seed}), 95%"
        ),
        predictions=predictions,
        predictions_note=note,
    )


__all__ = [
    "DEFAULT_RESAMPLES",
    "DEFAULT_SEED",
    "Comparison",
    "Mismatch",
    "OneSidedCell",
    "PairedRow",
    "ResultsIdentity",
    "RowComparison",
    "RunInfo",
    "compare",
    "load_side",
    "mismatches",
    "reviewer_rows",
]
