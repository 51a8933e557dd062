"""A lab run's JUnit XML (``junit.xml`` beside run.json): the gate is the test's outcome.

One suite (``sabot.lab.<scenario>``) with one testcase per run, named after the agent:

* gate ``pass``: a passed testcase;
* ``fail``: a ``<failure>`` whose message lists the violated rules;
* ``error``: an ``<error>`` (the harness failed: the evidence cannot be trusted);
* ``inconclusive``: a ``<skipped>`` whose message is the reason (an unfinished run or a
  required fault that did not activate and land): a CI dashboard never counts it as a pass.

The suite's properties and the testcase's ``system-out`` (``key=value`` a line, as
pytest's default JUnit family carries fields) hold the run id, scenario and its digest,
the agent, the execution, the violations and every fault's coverage. Nothing but the
record is read: two renderings of one record are the same bytes.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from pytest_sabot.lab.record import LabRun

JUNIT_FILE = "junit.xml"


def _seconds(ms: float) -> str:
    return f"{max(ms, 0.0) / 1000:.3f}"


def lab_fields(record: LabRun) -> list[tuple[str, str]]:
    """The ``sabot.lab.*`` fields of a run, in a stable order."""
    gate, m = record.gate, record.measurement
    fields = [
        ("sabot.lab.run_id", record.run_id),
        ("sabot.lab.scenario", record.scenario.name),
        ("sabot.lab.scenario_digest", record.scenario_digest),
        ("sabot.lab.agent", record.agent.name),
        ("sabot.lab.agent_kind", record.agent.kind),
        ("sabot.lab.fixture", str(record.agent.fixture).lower()),
        ("sabot.lab.gate", gate.outcome),
        ("sabot.lab.exit_code", str(gate.exit_code)),
        ("sabot.lab.execution", record.execution.status),
        ("sabot.lab.violations", ",".join(v.rule for v in gate.violations)),
        ("sabot.lab.routed_calls", str(m.routed_calls)),
        ("sabot.lab.deliveries", str(m.deliveries)),
        ("sabot.lab.effects", str(m.effects)),
        ("sabot.lab.virtual_ms", str(m.virtual_ms)),
    ]
    fields += [(f"sabot.lab.fault.{c.id}",
                f"{c.fault} {'required' if c.required else 'optional'} {c.status} "
                f"{'landed' if c.landed else 'not landed'}") for c in gate.coverage]
    return fields


def _message(record: LabRun) -> str:
    gate = record.gate
    if gate.outcome == "fail":
        return "; ".join(f"{v.rule}: {v.message}" for v in gate.violations)
    return gate.reasons[0] if gate.reasons else gate.outcome


def lab_junit_xml(record: LabRun) -> str:
    """The JUnit XML of one lab run (see the module's text)."""
    gate = record.gate
    outcome = gate.outcome
    classname = f"sabot.lab.{record.scenario.name}"
    suites = ET.Element("testsuites", name="sabot-lab")
    suite = ET.SubElement(
        suites, "testsuite", name=classname, tests="1",
        failures=str(int(outcome == "fail")), errors=str(int(outcome == "error")),
        skipped=str(int(outcome == "inconclusive")), time=_seconds(record.timings.real_ms),
        timestamp=record.timings.started_at,
    )
    props = ET.SubElement(suite, "properties")
    for name, value in lab_fields(record):
        ET.SubElement(props, "property", name=name, value=value)
    case = ET.SubElement(suite, "testcase", classname=classname, name=record.agent.name,
                         time=_seconds(record.timings.real_ms))
    detail = "\n".join(gate.reasons)
    if outcome == "fail":
        node = ET.SubElement(case, "failure", type="sabot.lab.fail", message=_message(record))
        node.text = detail
    elif outcome == "error":
        node = ET.SubElement(case, "error", type="sabot.lab.error", message=_message(record))
        node.text = detail
    elif outcome == "inconclusive":
        node = ET.SubElement(case, "skipped", type="sabot.lab.inconclusive",
                             message=f"inconclusive: {_message(record)}")
        node.text = detail
    out = ET.SubElement(case, "system-out")
    out.text = "".join(f"{k}={v}\n" for k, v in lab_fields(record)) + "".join(
        f"reason={r}\n" for r in gate.reasons)
    ET.indent(suites)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(
        suites, encoding="unicode") + "\n"


__all__ = ["JUNIT_FILE", "lab_fields", "lab_junit_xml"]
