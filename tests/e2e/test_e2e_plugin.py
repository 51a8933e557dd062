"""The plugin end to end, as a user runs it: ``pytest --sabot-wave=1`` over a keyless slice
of all three frameworks (one task, one seed, both configs, baselines and two operators)
with ``-n 2``, then the same recorded slice scored again with the soft-tier judge on.

- S8.1/S5.2: the slice exits 0, prints the scoreboard with its six framework x config rows
  and writes a results.json that validates.
- Secrets: a canary provider key in the environment reaches no file of the run's output,
  the JUnit XML or the log file (logging at DEBUG, captured output in the XML).
- S6.5: the headline never sees the judge. Scoring the recorded slice with no judge and
  with the embedded judge gives every row the same Sabot Score; only soft-tier numbers move.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import jsonschema  # type: ignore[import-untyped]
import pytest
from e2e_bank import ROWS, SEED, framework_missing, require_adapter
from e2e_sessions import Session, describe, run_session

from pytest_sabot.core.models.cells import FRAMEWORKS
from pytest_sabot.core.models.verdict import CellVerdict
from pytest_sabot.core.trace_io import TRACE_FILE
from pytest_sabot.results import ResultsFile

# Each test runs whole pytest sessions of real pipelines (seconds each).
pytestmark = pytest.mark.slow

SLICE = [
    "--sabot-wave=1",
    "--sabot-task=T1",
    f"--sabot-seed={SEED}",
    "--sabot-operator=baseline,O1,O3",
]
CELLS_PER_ROW = 3  # the baseline and two fault cells
SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"
KEY_VARIABLES = ("OPENAI_API_KEY", "AZURE_OPENAI_API_KEY", "ANTHROPIC_API_KEY")


def _shared(config: pytest.Config, factory: pytest.TempPathFactory, name: str) -> Path:
    base = factory.getbasetemp()
    return (base.parent if hasattr(config, "workerinput") else base) / name


def _require_all_adapters() -> None:
    missing = [r for r in map(framework_missing, FRAMEWORKS) if r is not None]
    if missing:
        pytest.skip("; ".join(missing))
    for framework in FRAMEWORKS:
        require_adapter(framework)  # a broken import of an adapter fails here


@pytest.fixture(scope="session")
def slice_dir(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _shared(pytestconfig, tmp_path_factory, "sabot-e2e-slice")


@pytest.fixture(scope="session")
def canary(slice_dir: Path) -> str:
    """A key-shaped value unique to this test session (the same on every worker)."""
    return "sk-canary-" + hashlib.sha256(str(slice_dir).encode()).hexdigest()[:32]


@pytest.fixture(scope="session")
def keyless_slice(slice_dir: Path, canary: str) -> Session:
    _require_all_adapters()
    return run_session(
        slice_dir,
        [
            *SLICE,
            "-n",
            "2",
            "-v",
            "--sabot-judge=none",
            f"--junitxml={slice_dir / 'junit.xml'}",
            "-o",
            "junit_logging=all",
            "-o",
            f"log_file={slice_dir / 'session.log'}",
            "-o",
            "log_file_level=DEBUG",
        ],
        env=dict.fromkeys(KEY_VARIABLES, canary),
    )


@pytest.fixture(scope="session")
def rejudged(keyless_slice: Session, slice_dir: Path) -> Session:
    """The recorded slice copied and scored again, resumed (nothing re-runs), with the
    embedded judge on."""
    where = slice_dir.parent / "sabot-e2e-rejudged"
    copy = where / "out"
    if not copy.exists():
        shutil.copytree(keyless_slice.out, copy)
    return run_session(
        where, [*SLICE, "-p", "no:xdist", "--sabot-resume", "--sabot-judge=sim"], out=copy
    )


def test_S8_1_keyless_slice_of_all_frameworks_runs_green_with_xdist(
    keyless_slice: Session,
) -> None:
    session = keyless_slice
    assert session.returncode == 0, describe(session)
    assert "2 workers" in session.stdout, describe(session)
    lines = session.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Sabot scoreboard"))
    header = next(i for i in range(start, len(lines)) if lines[i].startswith("row "))
    board = lines[header : header + 7]
    shown = [f"{fw}-{cfg}" for fw, cfg in ROWS if any(x.startswith(f"{fw}-{cfg} ") for x in board)]
    assert len(shown) == 6, "\n".join(board)
    assert "keyless: fixtures of the embedded model" in session.stdout

    results = ResultsFile.model_validate_json((session.out / "results.json").read_text())
    assert sorted(r.row for r in results.scoreboard.rows) == sorted(f"{f}-{c}" for f, c in ROWS)
    assert results.fixture and results.selection.missing == []
    assert results.selection.selected == results.selection.recorded == 6 * CELLS_PER_ROW
    assert len(results.cells) == 6 * CELLS_PER_ROW
    assert all(r.runs == CELLS_PER_ROW - 1 for r in results.scoreboard.rows)
    assert (session.out / "RESULTS.md").is_file()

    raw = json.loads((session.out / "results.json").read_text(encoding="utf-8"))
    jsonschema.validate(raw, ResultsFile.model_json_schema())
    published = {
        kind: json.loads((SCHEMAS / f"{kind}-verdict.schema.json").read_text(encoding="utf-8"))
        for kind in ("cell", "baseline")
    }
    for cell in raw["cells"]:
        jsonschema.validate(cell, published["baseline" if cell["kind"] == "baseline" else "cell"])


def test_secrets_a_canary_key_reaches_no_output_junit_or_log(
    keyless_slice: Session, canary: str
) -> None:
    session = keyless_slice
    assert session.returncode == 0, describe(session)
    junit = session.cwd / "junit.xml"
    logs = sorted(session.cwd.glob("session.log*"))
    assert junit.is_file() and logs, "the session wrote no JUnit XML or log file"
    assert "sabot.cell" in junit.read_text(encoding="utf-8")
    scanned = [junit, *logs, *(p for p in session.out.rglob("*") if p.is_file())]
    assert len(scanned) > 6 * CELLS_PER_ROW
    needle = canary.encode()
    leaked = [str(p) for p in scanned if needle in p.read_bytes()]
    assert not leaked, f"canary key found in {leaked}"
    assert canary not in session.stdout and canary not in session.stderr


def _fault_cells(results: ResultsFile) -> dict[str, CellVerdict]:
    return {c.cell_id: c for c in results.cells if isinstance(c, CellVerdict)}


def test_S6_5_headline_is_independent_of_the_judge(
    keyless_slice: Session, rejudged: Session
) -> None:
    assert keyless_slice.returncode == 0, describe(keyless_slice)
    assert rejudged.returncode == 0, describe(rejudged)
    for trace in keyless_slice.out.glob(f"cells/*/{TRACE_FILE}"):
        copied = rejudged.out / trace.relative_to(keyless_slice.out)
        assert copied.read_bytes() == trace.read_bytes(), f"{trace.parent.name} re-ran"

    unjudged, judged = keyless_slice.results, rejudged.results
    assert unjudged.judge is None and judged.judge is not None
    before, after = _fault_cells(unjudged), _fault_cells(judged)
    assert before.keys() == after.keys() and before
    for cell, verdict in before.items():
        assert not verdict.soft_judged
        assert after[cell].soft_judged, f"{cell} was not judged"
        assert after[cell].detected_hard == verdict.detected_hard, cell
        assert after[cell].acts == verdict.acts, cell
    for old, new in zip(unjudged.scoreboard.rows, judged.scoreboard.rows, strict=True):
        assert old.row == new.row
        assert new.sabot_score == old.sabot_score, old.row
        assert (new.valid, new.runs, new.reaction, new.recovery) == (
            old.valid,
            old.runs,
            old.reaction,
            old.recovery,
        )
        assert new.exclusions == old.exclusions
    assert unjudged.scoreboard.median_sabot_score == judged.scoreboard.median_sabot_score
    soft_before = [r.soft_notice for r in unjudged.scoreboard.rows]
    soft_after = [r.soft_notice for r in judged.scoreboard.rows]
    assert soft_before != soft_after, "the judge changed no soft-tier number in this slice"
