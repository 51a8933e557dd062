"""Every output of a session reports each cell's final verdict (SPEC I96).

A fault cell's verdict shown while it ran is provisional when its baseline had not been
recorded yet (another worker was still running it, or pytest ran the cells in another
order). The session's results are scored from disk once every cell has run, and those
verdicts are the ones results.json, RESULTS.md, report.html and ``sabot export`` give. So
before pytest prints its count line and writes the JUnit XML, the controller puts each
cell's final verdict in their place:

- the terminal's statistics: the cell's report moves to its final category (the count
  line then counts final verdicts), and the report's own ``sabot`` fields are updated;
- the JUnit XML: the cell's testcase gets its final ``sabot.*`` fields, as properties
  (xunit1) or in its system-out (xunit2).

The progress letters printed while the cells ran stay as they were printed; ``-v`` marks
a provisional one "(provisional: baseline pending)".
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

import pytest

from pytest_sabot.results.outcomes import outcome_of

if TYPE_CHECKING:
    from pytest_sabot.matrix.standard import Standard
    from pytest_sabot.results import ResultsFile

PREFIX = "sabot."


def final_fields(std: Standard, results: ResultsFile) -> dict[str, dict[str, Any]]:
    """Cell id -> its final category, letter, word, verdict and JUnit properties, for every
    cell results.json gives a verdict."""
    from pytest_sabot.session.runner import cell_properties

    fields: dict[str, dict[str, Any]] = {}
    for verdict in results.cells:
        outcome = outcome_of(verdict)
        fields[verdict.cell_id] = {
            "category": outcome.category,
            "letter": outcome.letter,
            "word": outcome.word,
            "verdict": outcome.verdict,
            "provisional": False,
            "properties": cell_properties(std.cell(verdict.cell_id), verdict, outcome),
        }
    return fields


def settle(
    config: pytest.Config,
    reports: Mapping[str, pytest.TestReport],
    fields: Mapping[str, dict[str, Any]],
) -> list[str]:
    """Put each cell's final verdict in the terminal's statistics and the JUnit XML.
    Returns the cells whose shown verdict changed."""
    changed: list[str] = []
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    stats: dict[str, list[Any]] = getattr(terminal, "stats", {}) if terminal else {}
    for cell_id, report in reports.items():
        final = fields.get(cell_id)
        shown = getattr(report, "sabot", None)
        if final is None or not isinstance(shown, dict):
            continue
        if shown.get("word") == final["word"] and shown.get("properties") == final["properties"]:
            continue
        changed.append(cell_id)
        if not report.failed:  # a failure keeps its category (its traceback must show)
            _move(stats, report, str(shown["category"]), final["category"], terminal)
        shown.update(final)
    if changed:
        _rewrite_junit(config, {c: fields[c]["properties"] for c in changed})
    return changed


def _add(terminal: Any, stats: dict[str, list[Any]], category: str, report: Any) -> None:
    """A report counted under ``category``: through the terminal's own bookkeeping where it
    has one, which also makes a category new to the session part of the count line."""
    add = getattr(terminal, "_add_stats", None)
    if callable(add):
        add(category, [report])
    else:
        stats.setdefault(category, []).append(report)


def _move(stats: dict[str, list[Any]], report: Any, old: str, new: str,
          terminal: Any = None) -> None:
    if old == new:
        return
    kept = stats.get(old, [])
    if report in kept:
        kept.remove(report)
        if not kept:
            stats.pop(old, None)
        _add(terminal, stats, new, report)


def _rewrite_junit(config: pytest.Config, properties: Mapping[str, list[tuple[str, str]]]) -> None:
    """The testcases of the changed cells carry their final ``sabot.*`` fields."""
    from pytest_sabot.session.junit import xml_of

    xml = xml_of(config)
    if xml is None:
        return
    for reporter in xml.node_reporters_ordered:
        case: ET.Element = reporter.to_xml()
        cell_id = _cell_of(case.get("name", ""))
        if cell_id not in properties:
            continue
        final = properties[cell_id]
        for node in case.iter("properties"):
            others = [p for p in node if not str(p.get("name", "")).startswith(PREFIX)]
            for p in list(node):
                node.remove(p)
            for p in others:
                node.append(p)
            for name, value in final:
                ET.SubElement(node, "property", name=name, value=value)
        for out in case.iter("system-out"):
            if (out.text or "").startswith(f"{PREFIX}cell="):
                out.text = "\n".join(f"{k}={v}" for k, v in final) + "\n"


def _cell_of(name: str) -> str:
    """The cell id of a testcase name ``test_cell[<cell id>]`` ('' for any other test)."""
    if name.startswith("test_cell[") and name.endswith("]"):
        return name[len("test_cell["):-1]
    return ""


def report_unreported(
    config: pytest.Config,
    wave: int,
    reported: Collection[str],
    nodeids: Mapping[str, str],
    fields: Mapping[str, dict[str, Any]],
    not_run: Mapping[str, str],
) -> list[str]:
    """Each selected cell the results count or list as not run but whose test never
    reported: a worker stopped by SIGINT or SIGTERM after it recorded the cell and before
    its report reached the controller, or a cell an interrupted session never started.
    A recorded cell gets its final verdict as a test result (the count line and the JUnit
    XML count the cells results.json counts, SPEC I96); a cell not run gets a skipped
    testcase naming the reason, as ``sabot export`` files it. Returns the cells reported."""
    from pytest_sabot.core.models.cells import parse_cell_id
    from pytest_sabot.results.junit_fields import classname
    from pytest_sabot.session.junit import case_properties_allowed, xml_of

    terminal = config.pluginmanager.get_plugin("terminalreporter")
    stats: dict[str, list[Any]] = getattr(terminal, "stats", {}) if terminal else {}
    xml = xml_of(config)
    done: list[str] = []
    for cell_id, nodeid in nodeids.items():
        final = fields.get(cell_id)
        if cell_id in reported or (final is None and cell_id not in not_run):
            continue
        location = (nodeid.split("::")[0], None, nodeid.split("::")[-1])
        if final is not None:
            report = pytest.TestReport(nodeid, location, {}, "passed", None, "call")
            report.sabot = dict(final, cell_id=cell_id)  # type: ignore[attr-defined]
            _add(terminal, stats, str(final["category"]), report)
        elif xml is not None:
            why = f"NOT_RUN ({not_run[cell_id]})"
            report = pytest.TestReport(nodeid, location, {}, "skipped",
                                       (location[0], 0, why), "setup")
        else:
            continue
        done.append(cell_id)
        if xml is None:
            continue
        reporter = xml.node_reporter(report)
        found = parse_cell_id(cell_id)
        reporter.add_attribute("classname", classname(wave, found.row if found else cell_id))
        if final is not None and case_properties_allowed(config):
            for name, value in final["properties"]:
                reporter.add_property(name, value)
        elif final is not None:
            out = ET.Element("system-out")
            out.text = "\n".join(f"{k}={v}" for k, v in final["properties"]) + "\n"
            reporter.append(out)
        xml.pytest_runtest_logreport(report)
        xml.pytest_runtest_logreport(
            pytest.TestReport(nodeid, location, {}, "passed", None, "teardown"))
    return done
