"""Issue 9.6: JUnit XML that dashboards read correctly (SPEC I48).

The XML of a slice (under xdist, with a structural zero and gated rows) validates against
the junit-10 schema pytest's default family follows (tests/data/junit-10.xsd, checked with
xmlschema), parses with junitparser, and junit2html files the cells under their rows.
"""

from __future__ import annotations

import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
import xmlschema
from junitparser import Failure, JUnitXml, Properties, Property, Skipped, TestCase
from plugin_runs import Run, copy_out, run, shared, shared_dir

from pytest_sabot.commands.cli import main
from pytest_sabot.core.models.verdict import BaselineVerdict

# Each test runs whole pytest sessions of real pipelines (seconds each).
pytestmark = pytest.mark.slow

XSD = Path(__file__).resolve().parents[1] / "data" / "junit-10.xsd"
SLICE = [
    "--sabot-wave=2",
    "--sabot-framework=langgraph,autogen",
    "--sabot-config=guardrail",
    "--sabot-task=T1",
    "--sabot-seed=11",
    "--sabot-operator=baseline,O1,O2",
]
ZERO = "autogen-guardrail-O2-T1-s11"  # a registered carve-out of waves 2 and 3
VERDICTS = {
    "BASELINE_PASS", "BASELINE_FAIL", "RUN_ERROR", "DETECTED_HARD", "DETECTED_SOFT", "MISSED",
    "INJECTION_UNVERIFIED", "STRUCTURAL_ZERO",
}


@pytest.fixture(scope="module")
def gated(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Run:
    where = shared_dir(pytestconfig, tmp_path_factory, "sabot-junit-slice")
    return shared(where, *SLICE, "-n", "2", "-v", "--sabot-fail-under=0",
                  f"--junitxml={where / 'junit.xml'}")


def _xml(session: Run) -> Path:
    return session.cwd / "junit.xml"


def _cases(path: Path) -> list[TestCase]:
    xml = JUnitXml.fromfile(str(path))
    suites = [xml] if xml._tag == "testsuite" else list(xml)
    return [case for suite in suites for case in suite]


def _pairs(case: TestCase) -> dict[str, str]:
    return dict(
        line.split("=", 1) for line in (case.system_out or "").splitlines() if "=" in line
    )


def test_9_6_junit_of_a_slice_validates_against_the_junit_10_schema(gated: Run) -> None:
    assert gated.returncode == 0, gated.describe()
    xmlschema.XMLSchema(str(XSD)).validate(str(_xml(gated)))


def test_9_6_each_cell_is_filed_under_its_row_with_its_verdict(gated: Run) -> None:
    cases = [c for c in _cases(_xml(gated)) if c.name.startswith("test_cell[")]
    results = gated.results
    assert len(cases) == len(results.selection.cell_ids) == 6
    words = {}
    for cell in results.cells:
        if isinstance(cell, BaselineVerdict):
            words[cell.cell_id] = "BASELINE_PASS" if cell.status == "passed" else cell.status
        else:
            words[cell.cell_id] = cell.excluded.code if cell.excluded else cell.detection
    for case in cases:
        cell_id = case.name[len("test_cell[") : -1]
        row = cell_id.rsplit("-", 3)[0]
        assert case.classname == f"sabot.wave2.{row}"
        assert case.child(Properties) is None  # xunit2 has no testcase properties
        pairs = _pairs(case)
        assert pairs["sabot.cell"] == cell_id and pairs["sabot.row"] == row
        assert pairs["sabot.verdict"] in VERDICTS
        if cell_id != ZERO:
            assert pairs["sabot.verdict"] == words[cell_id]


def test_9_6_structural_zeros_are_skipped_testcases(gated: Run) -> None:
    (zero,) = [c for c in _cases(_xml(gated)) if c.name == f"test_cell[{ZERO}]"]
    skipped = [r for r in zero.result if isinstance(r, Skipped)]
    assert skipped and "STRUCTURAL_ZERO" in (skipped[0].message or "")
    others = [c for c in _cases(_xml(gated)) if c.name != f"test_cell[{ZERO}]"]
    assert all(c.is_passed for c in others)


def test_9_6_the_suite_carries_the_session_and_row_results(gated: Run) -> None:
    xml = JUnitXml.fromfile(str(_xml(gated)))
    suite = xml if xml._tag == "testsuite" else next(iter(xml))
    props = {p.name: p.value for p in suite.properties()}
    assert props["sabot.wave"] == "2" and props["sabot.status"] == "complete"
    assert props["sabot.complete"] == "true" and props["sabot.selected"] == "5"
    for row in ("langgraph-guardrail", "autogen-guardrail"):
        assert props[f"sabot.baselines.{row}"] == "1/1"
        assert props[f"sabot.valid.{row}"] != "0"
    gates = {c.name: c for c in _cases(_xml(gated)) if c.classname == "sabot.gate"}
    assert set(gates) == {
        "gate[langgraph-guardrail]", "gate[autogen-guardrail]", "gate[run-errors]",
        "gate[baselines]",
    }
    assert all(g.is_passed for g in gates.values())


def test_9_6_a_failing_row_gate_is_a_failed_testcase_dashboards_show(
    gated: Run, tmp_path: Path
) -> None:
    out = copy_out(gated, tmp_path)
    junit = tmp_path / "gate.xml"
    failing = run(tmp_path, *SLICE, "-p", "no:xdist", "--sabot-resume",
                  "--sabot-fail-under=1.0", f"--junitxml={junit}", out=out)
    xmlschema.XMLSchema(str(XSD)).validate(str(junit))
    gates = {c.name: c for c in _cases(junit) if c.classname == "sabot.gate"}
    below = [name for name, case in gates.items()
             if any(isinstance(r, Failure) for r in case.result)]
    rows = {r.row: r.sabot_score.value for r in failing.results.scoreboard.rows}
    expected = {f"gate[{row}]" for row, value in rows.items() if value is not None and value < 1}
    assert set(below) == expected
    assert failing.returncode == (1 if expected else 0), failing.describe()
    # The gates are kept with the results the exit status read them from: results.json,
    # RESULTS.md, and the export's XML files them as the session's own did.
    recorded = {f"gate[{g.name}]": g.passed for g in failing.results.gates or []}
    assert recorded == {name: name not in below for name in gates}
    md = (out / "RESULTS.md").read_text()
    assert all(f"> gate {n[5:-1]} **FAILED**: " in md for n in below), md[:2000]
    exported = tmp_path / "exported.xml"
    done = subprocess.run(
        [sys.executable, "-m", "pytest_sabot", "export", str(out), "--format", "junit",
         "--out", str(exported)], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    xmlschema.XMLSchema(str(XSD)).validate(str(exported))
    theirs = {c.name: any(isinstance(r, Failure) for r in c.result)
              for c in _cases(exported) if c.classname == "sabot.gate"}
    assert theirs == {name: name in below for name in gates}
    assert main(["rescore", str(out)]) == 0  # the gates are carried over as recorded


def test_9_6_xunit1_carries_per_testcase_properties(gated: Run, tmp_path: Path) -> None:
    out = copy_out(gated, tmp_path)
    junit = tmp_path / "xunit1.xml"
    legacy = run(tmp_path, *SLICE, "-p", "no:xdist", "--sabot-resume", "-o",
                 "junit_family=xunit1", f"--junitxml={junit}", out=out)
    assert legacy.returncode == 0, legacy.describe()
    for case in _cases(junit):
        if not case.name.startswith("test_cell["):
            continue
        block = case.child(Properties)
        assert block is not None, case.name
        props = {p.name: p.value for p in block.iterchildren(Property)}
        assert props["sabot.cell"] in case.name and props["sabot.verdict"] in VERDICTS


def test_9_6_each_verdict_is_spelled_one_way_everywhere(gated: Run) -> None:
    shown = set(re.findall(r"\[gw\d\] \[\s*\d+%\] (\w+)", gated.stdout))
    assert shown and shown <= VERDICTS | {"SKIPPED"}, shown
    written = {_pairs(c)["sabot.verdict"] for c in _cases(_xml(gated)) if c.system_out
               and "sabot.verdict" in c.system_out}
    assert written <= VERDICTS
    text = _xml(gated).read_text() + gated.stdout + (gated.out / "RESULTS.md").read_text()
    assert "BASELINE_PASSED" not in text and "BASELINE_FAILED" not in text


class _Classes(HTMLParser):
    """The test names junit2html files under each class heading."""

    def __init__(self) -> None:
        super().__init__()
        self.classes: dict[str, list[str]] = {}
        self._current: str | None = None
        self._in_h4 = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._in_h4 = tag == "h4"

    def handle_endtag(self, tag: str) -> None:
        self._in_h4 = False

    def handle_data(self, data: str) -> None:
        if self._in_h4 and data.strip():
            self._current = data.strip()
            self.classes.setdefault(self._current, [])
        elif self._current is not None:
            self.classes[self._current] += re.findall(r"test_cell\[[^\]]+\]", data)


def test_9_6_junit2html_groups_the_cells_by_row(gated: Run, tmp_path: Path) -> None:
    html = tmp_path / "report.html"
    subprocess.run(
        [sys.executable, "-m", "junit2htmlreport", str(_xml(gated)), str(html)], check=True
    )
    parser = _Classes()
    parser.feed(html.read_text())
    grouped = {k: sorted(set(v)) for k, v in parser.classes.items() if v}
    assert grouped == {
        "sabot.wave2.langgraph-guardrail": [
            f"test_cell[langgraph-guardrail-{op}-T1-s11]" for op in ("O1", "O2", "baseline")
        ],
        "sabot.wave2.autogen-guardrail": [
            f"test_cell[autogen-guardrail-{op}-T1-s11]" for op in ("O1", "O2", "baseline")
        ],
    }
    assert "no-testclass" not in html.read_text()


def test_I80_sabot_export_junit_files_each_cell_as_the_sessions_own_xml(
    gated: Run, tmp_path: Path
) -> None:
    """A dashboard fed the session's XML and the export's sees the same testcases (name,
    classname, skipped or not) with the same fields, and the same suite properties."""
    exported = tmp_path / "exported.xml"
    done = subprocess.run(
        [sys.executable, "-m", "pytest_sabot", "export", str(gated.out), "--format", "junit",
         "--out", str(exported)], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    xmlschema.XMLSchema(str(XSD)).validate(str(exported))

    def cells(path: Path) -> dict[str, tuple[str, bool, dict[str, str]]]:
        return {c.name: (c.classname, c.is_skipped, _pairs(c)) for c in _cases(path)
                if c.name.startswith("test_cell[")}

    def suite(path: Path) -> dict[str, str]:
        xml = JUnitXml.fromfile(str(path))
        first = xml if xml._tag == "testsuite" else next(iter(xml))
        return {p.name: p.value for p in first.properties()}

    own, theirs = cells(_xml(gated)), cells(exported)
    assert sorted(own) == sorted(theirs) and len(own) == 6
    for name, (classname, skipped, pairs) in own.items():
        assert theirs[name][:2] == (classname, skipped), name
        assert theirs[name][2] == pairs, name
    assert suite(exported) == suite(_xml(gated))
