"""The evidence files a lab run leaves beside its ``run.json``: ``report.html`` (the offline
page) and ``junit.xml`` (the gate as a test outcome), both rendered from the record alone.

:func:`write_lab_evidence` is what :func:`pytest_sabot.commands.lab_outputs.write_lab_run`
calls for every entry point, and what a lab-matrix session calls for each lab cell whose
record the harness wrote. Both files are renderings: whatever earlier rendering sat
beside a record that was set aside (``run.prev-N.json``) is set aside with the same N, so
no earlier page or XML is lost either.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pytest_sabot.core.trace_io import write_text_atomic
from pytest_sabot.lab.record import LabRun
from pytest_sabot.report.lab_junit import JUNIT_FILE, lab_junit_xml

REPORT_FILE = "report.html"


@dataclass(frozen=True)
class LabEvidence:
    """Where a run's renderings were written."""

    report: Path
    junit: Path


def _set_aside(path: Path) -> None:
    """Move an earlier rendering to ``<stem>.prev-N<suffix>`` (N as the record's)."""
    if not path.exists():
        return
    n = 1
    while path.with_name(f"{path.stem}.prev-{n}{path.suffix}").exists():
        n += 1
    path.rename(path.with_name(f"{path.stem}.prev-{n}{path.suffix}"))


def write_lab_evidence(out_dir: Path, record: LabRun) -> LabEvidence:
    """Write ``report.html`` and ``junit.xml`` of ``record`` into ``out_dir`` (atomically;
    an earlier rendering there is set aside first)."""
    from pytest_sabot.report.html import render_lab_record

    out_dir.mkdir(parents=True, exist_ok=True)
    report, junit = out_dir / REPORT_FILE, out_dir / JUNIT_FILE
    page, xml = render_lab_record(record), lab_junit_xml(record)
    for path in (report, junit):
        _set_aside(path)
    write_text_atomic(report, page)
    write_text_atomic(junit, xml)
    return LabEvidence(report=report, junit=junit)


__all__ = ["REPORT_FILE", "LabEvidence", "write_lab_evidence"]
