"""S3.2 / S3.3 through the plugin: every excluded run is listed item by item, with its one
code and its reason, in results.json and in RESULTS.md's exclusion appendix.

The three codes are produced by real runs on a user's own copy of the standard
(``--sabot-root``): T1's pass criterion is changed so that its baseline fails (its fault
runs become BASELINE_FAIL), T2's O1 spec names a value the tool never returns (the fault
never lands: INJECTION_UNVERIFIED), and one T2 fault run is made, after its baseline
passed, against a gateway that refuses connections (RUN_ERROR). A second, resumed session
does that last run and scores the whole slice."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml
from e2e_bank import SEED, refused_url, require_adapter
from e2e_sessions import Session, describe, run_session

from pytest_sabot.core.models.cells import cell_id
from pytest_sabot.core.models.verdict import CellVerdict
from pytest_sabot.matrix.standard import Standard

# Each test runs whole pytest sessions of real pipelines (seconds each).
pytestmark = pytest.mark.slow

SLICE = [
    "--sabot-wave=1",
    "--sabot-framework=langgraph",
    "--sabot-config=default",
    "--sabot-task=T1,T2",
    f"--sabot-seed={SEED}",
    "--sabot-operator=baseline,O1,O3",
    "--sabot-model=sim:vigilant",
    "--sabot-judge=none",
    "-p",
    "no:xdist",
]
EXPECTED = {
    cell_id("langgraph", "default", "O1", "T1", SEED): "BASELINE_FAIL",
    cell_id("langgraph", "default", "O3", "T1", SEED): "BASELINE_FAIL",
    cell_id("langgraph", "default", "O1", "T2", SEED): "INJECTION_UNVERIFIED",
    cell_id("langgraph", "default", "O3", "T2", SEED): "RUN_ERROR",
}


def _edit_yaml(path: Path, edit: dict[str, object], keys: list[str]) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    node = data
    for key in keys:
        node = node[key]
    node.update(edit)
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")


def own_root(std: Standard, where: Path) -> Path:
    """A copy of the standard with a failing T1 criterion and a T2 O1 that cannot land."""
    root = where / "standard"
    if not root.exists():
        for folder in ("cells", "tasks", "mappings"):
            shutil.copytree(std.root / folder, root / folder)
        _edit_yaml(
            root / "tasks/T1/private/criterion.yaml", {"part_id": "P-0000"}, ["check", "expected"]
        )
        _edit_yaml(
            root / "tasks/T2/private/operators.yaml", {"original": "9,999"}, ["operators", "O1"]
        )
    return root


@pytest.fixture(scope="session")
def excluded_slice(
    wave1: Standard, pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory
) -> Session:
    require_adapter("langgraph")
    base = tmp_path_factory.getbasetemp()
    where = (base.parent if hasattr(pytestconfig, "workerinput") else base) / "sabot-e2e-excl"
    where.mkdir(parents=True, exist_ok=True)
    root = own_root(wave1, where)
    args = [*SLICE, f"--sabot-root={root}"]
    first = run_session(where / "first", [*args, "-k", "not O3"], out=where / "out")
    assert first.returncode == 0, describe(first)
    # One RUN_ERROR in six cells is over the default --sabot-max-run-errors (5%), which
    # would fail the session; the appendix, not that gate, is under test here.
    return run_session(
        where / "second",
        [
            *args,
            "--sabot-resume",
            f"--sabot-gateway-url={refused_url()}",
            "--sabot-max-run-errors=1",
        ],
        out=where / "out",
    )


def test_S3_3_exclusion_appendix_lists_every_excluded_cell_with_code_and_reason(
    excluded_slice: Session,
) -> None:
    session = excluded_slice
    assert session.returncode == 0, describe(session)
    results = session.results
    verdicts = {c.cell_id: c for c in results.cells if isinstance(c, CellVerdict)}
    reasons = {}
    for cell, code in EXPECTED.items():
        excluded = verdicts[cell].excluded
        assert excluded is not None and excluded.code == code, (cell, excluded)
        assert excluded.reason.strip(), cell
        reasons[cell] = excluded.reason
    assert "refused" in reasons[cell_id("langgraph", "default", "O3", "T2", SEED)].lower()

    (row,) = results.scoreboard.rows
    listed = {c.cell_id: (c.code, c.reason) for c in row.excluded_cells}
    assert {cell: code for cell, (code, _) in listed.items()} == EXPECTED
    assert row.exclusions == {"RUN_ERROR": 1, "BASELINE_FAIL": 2, "INJECTION_UNVERIFIED": 1}
    assert row.valid == 0 and row.runs == 4

    markdown = (session.out / "RESULTS.md").read_text(encoding="utf-8")
    appendix = markdown.split("## Exclusion appendix", 1)[1]
    sections = dict(
        (m.group(1), m.group(2))
        for m in re.finditer(r"^### (\w+) \(\d+\)\n(.*?)(?=^### |\Z)", appendix, re.M | re.S)
    )
    for cell, (code, reason) in listed.items():
        assert f"`{cell}`: {reason}" in sections[code], (cell, code, sections.get(code))
    for code in ("RUN_ERROR", "BASELINE_FAIL", "INJECTION_UNVERIFIED"):
        count = sum(1 for c in EXPECTED.values() if c == code)
        assert f"### {code} ({count})" in appendix
    for cell, code in EXPECTED.items():
        assert f"{cell}: {code}:" in session.stdout, f"{cell} missing from the terminal appendix"
