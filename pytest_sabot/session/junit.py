"""The JUnit XML of a wave, as dashboards read it (SPEC I48).

- Each cell's testcase has the classname ``sabot.wave<N>.<row>`` (a dashboard groups the
  cells of a row together) and its cell id as its name.
- Structural zeros are skipped testcases (they are registered and never run).
- The verdict travels in fields the configured ``junit_family`` allows: per-testcase
  ``<properties>`` for xunit1/legacy; for xunit2 (pytest's default, the junit-10 schema
  forbids testcase properties) the same ``sabot.*`` pairs as the testcase's
  ``<system-out>``, one ``key=value`` per line.
- The suite carries the session's properties (wave, rules, model, label, status, per-row
  score, valid and baseline counts).
- The gates are testcases of their own, ``sabot::gate[<row>]`` and friends, passed or
  failed, so a dashboard shows a row's pass/fail under ``--sabot-fail-under``.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import TYPE_CHECKING, Any, Literal

import pytest

if TYPE_CHECKING:
    from pytest_sabot.results import ResultsFile
    from pytest_sabot.session.gates import Gate

PROPERTY_FAMILIES = ("xunit1", "legacy")


def xml_of(config: pytest.Config) -> Any:
    """pytest's LogXML object of the session (None without --junitxml)."""
    from _pytest.junitxml import xml_key

    return config.stash.get(xml_key, None)


def family(config: pytest.Config) -> str:
    try:
        value = config.getini("junit_family")
    except ValueError:
        value = None
    return str(value or "xunit2")


def case_properties_allowed(config: pytest.Config) -> bool:
    """Whether the configured family allows ``<properties>`` inside a testcase."""
    return family(config) in PROPERTY_FAMILIES


def annotate_case(
    config: pytest.Config, report: pytest.TestReport, result: dict[str, Any], wave: int
) -> None:
    """Give a cell's testcase its row as classname and, where the family forbids
    per-testcase properties, its verdict as system-out."""
    xml = xml_of(config)
    if xml is None:
        return
    reporter = xml.node_reporter(report)
    from pytest_sabot.results.junit_fields import classname

    reporter.add_attribute("classname", classname(wave, str(result["row"])))
    if not case_properties_allowed(config):
        out = ET.Element("system-out")
        out.text = "\n".join(f"{k}={v}" for k, v in result["properties"]) + "\n"
        reporter.append(out)


def forget_case(config: pytest.Config, report: pytest.TestReport) -> None:
    """Drop the testcase JUnit opened for a report that will be reported again (a cell
    whose worker crashed and that runs again): one testcase per cell."""
    xml = xml_of(config)
    if xml is None:
        return
    key = (report.id, getattr(report, "node", None))
    reporter = xml.node_reporters.pop(key, None)
    if reporter is not None and reporter in xml.node_reporters_ordered:
        xml.node_reporters_ordered.remove(reporter)


def suite_properties(config: pytest.Config, results: ResultsFile, run_id: str) -> None:
    from pytest_sabot.results.junit_fields import suite_pairs

    xml = xml_of(config)
    if xml is None:
        return
    for name, value in suite_pairs(results, run_id):
        xml.add_global_property(name, value)


def report_gates(config: pytest.Config, gates: list[Gate]) -> None:
    """Each shown gate as a test result of its own: a testcase in the JUnit XML, a count
    in the terminal's summary line and, when it failed, an entry of the failures and the
    short summary. (They are not sent through the hook, so the progress line of the cells
    stays at 100%.)"""
    xml = xml_of(config)
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    for gate in gates:
        if not gate.shown:
            continue
        outcome: Literal["passed", "failed"] = "passed" if gate.passed else "failed"
        location = ("sabot", None, f"gate[{gate.name}]")
        call = pytest.TestReport(
            gate.nodeid,
            location,
            {},
            outcome,
            None if gate.passed else f"pytest-sabot gate: {gate.message}",
            "call",
        )
        if terminal is not None:
            terminal.stats.setdefault(outcome, []).append(call)
        if xml is None:
            continue
        reporter = xml.node_reporter(call)
        reporter.add_attribute("classname", "sabot.gate")
        out = ET.Element("system-out")
        out.text = (
            f"sabot.gate={gate.name}\nsabot.passed={str(gate.passed).lower()}\n"
            f"sabot.message={gate.message}\n"
        )
        reporter.append(out)
        xml.pytest_runtest_logreport(call)
        xml.pytest_runtest_logreport(
            pytest.TestReport(gate.nodeid, location, {}, "passed", None, "teardown")
        )
