"""The one place a lab run's record is written for every entry point: ``sabot lab run``,
``python -m pytest_sabot.lab run``, ``sabot lab mcp``, the demo (``sabot lab demo`` and
``sabot demo``), the MCP cell server's lab scenarios, and anything else that runs
scenarios (a campaign's trials).

:func:`write_lab_run` writes, into the run's directory:

* ``run.json``: the record (an earlier one is set aside as ``run.prev-N.json``);
* ``report.html``: the offline page (:mod:`pytest_sabot.report.html`);
* ``junit.xml``: the gate as the testcase outcome (:mod:`pytest_sabot.report.lab_junit`);

and records the run into the SQLite run history (``$SABOT_HISTORY``, else the output
root's ``history.sqlite``; ``none`` turns it off). A history that cannot take the run
never costs the run its files or its exit code: the line says why and how to add it later.

The cells of a lab matrix are written by the harness (a layer below this one); the
session then writes the same two renderings with
:func:`pytest_sabot.report.lab_files.write_lab_evidence`, and the session as a whole is
what the history records.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pytest_sabot.lab.record import LabRun, write_run
from pytest_sabot.lab.vocabulary import RUN_FILE
from pytest_sabot.report.lab_files import write_lab_evidence


@dataclass(frozen=True)
class LabOutputs:
    """What :func:`write_lab_run` wrote, and what the history said."""

    run: Path
    report: Path
    junit: Path
    history: str  # the line to print ('' when the history is off)


def write_lab_run(out_dir: Path, record: LabRun, *,
                  history: bool | str | Path = True) -> LabOutputs:
    """Write ``record`` as ``out_dir/run.json`` with its ``report.html`` and ``junit.xml``
    and, unless ``history`` is False, record it in the run history (``history`` may name
    the history file; True: the default choice). See the module's text."""
    path = write_run(record, out_dir)
    evidence = write_lab_evidence(out_dir, record)
    line = ""
    if history is not False:
        from pytest_sabot.commands.history import record_results

        explicit = None if history is True else history
        try:
            line = record_results(out_dir, record, explicit)
        except Exception as exc:  # the history never costs a run its files or its exit
            line = (f"sabot lab: {out_dir / RUN_FILE} is written; the run history was not "
                    f"updated ({type(exc).__name__}: {exc})")
    return LabOutputs(run=path, report=evidence.report, junit=evidence.junit, history=line)


__all__ = ["LabOutputs", "write_lab_run"]
