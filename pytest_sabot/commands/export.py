"""``sabot export RUN --format html|json|junit [--out FILE]``: a run's offline report, its
results or its JUnit XML, the run named by its results directory (or results.json) or by
its id in the run history. A lab run (its run.json, the folder holding it, or its id)
exports the same three: its page, its record and its JUnit XML (:func:`export_lab`).

* ``json``: results.json of the run, byte for byte when the file on disk still holds it,
  else the copy the history kept when the run was recorded (a later session in the same
  directory replaced the file); to ``--out`` or stdout.
* ``junit``: the JUnit XML of the run's cells, built from its results (SPEC I80) with the
  session's own names and fields (``results/junit_fields.py``): one testcase per cell,
  classname ``sabot.wave<N>.<row>`` and ``test_cell[<cell id>]`` as its name, its
  ``sabot.*`` fields (coordinates, verdict, gate, funnel, exclusion, acts) as the
  testcase's system-out, one ``key=value`` a line, as pytest's default JUnit family has
  them; structural zeros and cells not run are skipped testcases; the suite carries the
  run's properties, as the session's does. A cell is a passed testcase whatever its
  verdict, as in the session's own XML: the verdict is a measurement, not a test failure.
  To ``--out`` or stdout; works from the history's copy as well.
* ``html``: the offline report (:mod:`pytest_sabot.report.html`) of the run's directory,
  to ``--out`` or report.html beside results.json. The report reads the cells' records
  beside results.json, so a run whose results.json was replaced has no report of its own
  any more: it is refused and the json export named instead.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.core.exit_codes import EXIT_ERROR, EXIT_PASS
from pytest_sabot.lab.record import LabRun
from pytest_sabot.results import RESULTS_FILE, ResultsFile


def _located(ref: str, history: Path, timeout: float) -> tuple[Path | None, Path | None, str,
                                                                 str]:
    """(the run's directory when its records still describe it, the run's own results.json
    there, the results.json text, where it was read). A run whose board was kept apart
    from its directory's (a slice beside a whole wave, another rule version) reads its own
    board, and its records in the directory."""
    from pytest_sabot.history import load_run_results
    from pytest_sabot.history.queries import resolve_results

    given = Path(ref)
    if given.exists():
        file = given / RESULTS_FILE if given.is_dir() else given
        if not file.is_file():
            raise SabotDataError(file, "", "a results.json written by a scored run "
                                 "(pytest --sabot-wave=N or sabot demo)", "no such file")
        from pytest_sabot.results.compare import load_side

        load_side(file)  # a damaged or foreign file is named before anything is written
        return file.parent, file, file.read_text(encoding="utf-8"), str(file)
    if not history.exists():
        raise SabotDataError(
            given, "", "a results directory, a results.json, or a run id recorded in the "
            f"history {history}", "no such file, and no history to look the id up in"
        )
    loaded = load_run_results(history, ref, timeout=timeout)
    if loaded.note:  # the history's copy: the directory now holds another session
        return None, None, loaded.results.model_dump_json(indent=2) + "\n", loaded.source
    out, file = resolve_results(history, ref, timeout=timeout)
    return out, file, file.read_text(encoding="utf-8"), str(file)


def _row_of(cell_id: str) -> str:
    """The scoreboard row of a cell id (the id itself when it spells none)."""
    from pytest_sabot.core.models.cells import parse_cell_id

    found = parse_cell_id(cell_id)
    return found.row if found is not None else cell_id


def junit_xml(results: ResultsFile) -> str:
    """The JUnit XML of a run's cells (see the module's text): the testcase names and the
    ``sabot.*`` fields of the session's own XML (``results/junit_fields.py``)."""
    import xml.etree.ElementTree as ET

    from pytest_sabot.results.junit_fields import (
        case_name,
        cell_pairs,
        classname,
        id_pairs,
        suite_pairs,
    )
    from pytest_sabot.results.outcomes import STRUCTURAL_ZERO_SKIP, outcome_of

    suites = ET.Element("testsuites", name="sabot")
    suite = ET.SubElement(suites, "testsuite", name=f"sabot.wave{results.wave}")
    props = ET.SubElement(suite, "properties")
    session = results.session
    if session is not None:
        run_id = session.run_id
    else:  # results written without a session (a merge): the id the run history gives it
        from pytest_sabot.history.sources import derived_results_id, digest_of

        run_id = derived_results_id(digest_of(results)[0])
    for name, value in suite_pairs(results, run_id):
        ET.SubElement(props, "property", name=name, value=value)
    tests = skipped = 0

    def case(row: str, cell_id: str, fields: list[tuple[str, str]], skip: str = "") -> None:
        nonlocal tests, skipped
        tests += 1
        node = ET.SubElement(suite, "testcase", classname=classname(results.wave, row),
                             name=case_name(cell_id), time="0")
        if skip:
            skipped += 1
            ET.SubElement(node, "skipped", type="pytest.skip", message=skip)
        out = ET.SubElement(node, "system-out")
        out.text = "".join(f"{k}={v}\n" for k, v in fields)

    # The session's own XML has a testcase per selected cell; a baseline pulled in by the
    # selection (SPEC I41) is no test of it, and is named in the suite's sabot.pulled_in.
    pulled = set(results.selection.pulled_in)
    for v in results.cells:
        if v.cell_id not in pulled:
            case(v.row, v.cell_id, cell_pairs(v, v, outcome_of(v).verdict))
    for cid in results.structural_zeros:
        case(_row_of(cid), cid, id_pairs(cid, "STRUCTURAL_ZERO"),
             STRUCTURAL_ZERO_SKIP)
    for n in results.selection.not_run:
        case(_row_of(n.cell_id), n.cell_id, id_pairs(n.cell_id, "NOT_RUN"),
             f"NOT_RUN ({n.reason})")
    failures = 0
    for gate in results.gates or []:  # the session's gates, as its own XML files them
        tests += 1
        node = ET.SubElement(suite, "testcase", classname="sabot.gate",
                             name=f"gate[{gate.name}]", time="0")
        if not gate.passed:
            failures += 1
            ET.SubElement(node, "failure", message=f"pytest-sabot gate: {gate.message}")
        out = ET.SubElement(node, "system-out")
        out.text = (f"sabot.gate={gate.name}\nsabot.passed={str(gate.passed).lower()}\n"
                    f"sabot.message={gate.message}\n")
    suite.set("tests", str(tests))
    suite.set("failures", str(failures))
    suite.set("errors", "0")
    suite.set("skipped", str(skipped))
    ET.indent(suites)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(
        suites, encoding="unicode") + "\n"


def cmd_export(args: argparse.Namespace) -> int:
    """0 when exported, 2 when the run cannot be found or read (named on stderr)."""
    from pytest_sabot.history import chosen_history
    from pytest_sabot.history.store import DEFAULT_TIMEOUT_S

    history = chosen_history(getattr(args, "history", None))
    wait = getattr(args, "wait", None)
    timeout = DEFAULT_TIMEOUT_S if wait is None else float(wait)
    from pytest_sabot.commands.lab_refs import lab_run_of

    lab = lab_run_of(args.run, history, timeout=timeout)
    if lab is not None:
        return export_lab(args.run, *lab, fmt=args.fmt, out=args.out)
    directory, own, text, source = _located(args.run, history, timeout)
    if args.fmt in ("json", "junit"):
        if args.fmt == "junit":
            text = junit_xml(ResultsFile.model_validate_json(text))
        if args.out is None:
            sys.stdout.write(text)
            return EXIT_PASS
        from pytest_sabot.core.trace_io import write_text_atomic

        write_text_atomic(args.out, text)
        print(f"{args.fmt} of {args.run} (read from {source}) written to {args.out}",
              file=sys.stderr)
        return EXIT_PASS
    if directory is None:
        print(
            f"sabot export: run {args.run} has no report of its own any more: {source} "
            "holds its results, but its directory's results.json now belongs to a later "
            "session (any of its records that later session ran again are set aside under "
            f"superseded/); `sabot export {args.run} --format json` gives its results",
            file=sys.stderr,
        )
        return EXIT_ERROR
    from pytest_sabot.report.html import REPORT_FILE, write_results_html

    # A board kept apart gets its report beside its own results.json, never over the
    # directory's report.html.
    target = args.out
    if target is None and own is not None and own.parent != directory:
        target = own.parent / REPORT_FILE
    written = write_results_html(directory, target, results_file=own)
    print(f"report of {args.run}: {written}")
    return EXIT_PASS


LAB_EXPORTS = {"html": ("text/html", "report.html"), "json": ("application/json", "run.json"),
               "junit": ("application/xml", "junit.xml")}


def lab_export_text(record: LabRun, folder: Path | None, fmt: str) -> str:
    """One export of a lab run as text: ``html`` its offline page, ``junit`` its JUnit XML
    (the gate as the testcase outcome), ``json`` its record (run.json byte for byte when
    ``folder`` still holds it). What ``sabot export`` writes and ``sabot serve`` offers."""
    from pytest_sabot.lab.vocabulary import RUN_FILE
    from pytest_sabot.report.html import render_lab_record
    from pytest_sabot.report.lab_junit import lab_junit_xml

    if fmt == "html":
        return render_lab_record(record)
    if fmt == "junit":
        return lab_junit_xml(record)
    if fmt != "json":
        raise SabotDataError(record.run_id, "--format", "html, json or junit", repr(fmt))
    if folder is not None:
        return (folder / RUN_FILE).read_text(encoding="utf-8")
    return record.model_dump_json(indent=2) + "\n"


def export_lab(ref: str, record: LabRun, source: str, folder: Path | None, *, fmt: str,
               out: Path | None) -> int:
    """A lab run's export (:func:`lab_export_text`): ``html`` to ``--out`` or report.html
    beside its run.json, ``json`` and ``junit`` to ``--out`` or stdout."""
    from pytest_sabot.core.trace_io import write_text_atomic
    from pytest_sabot.report.html import REPORT_FILE

    if fmt == "html":
        target = out if out is not None else (folder / REPORT_FILE if folder else None)
        if target is None:
            raise SabotDataError(ref, "--out", "a file to write the page to (the run's "
                                 "directory no longer holds its run.json)", "not given")
        write_text_atomic(target, lab_export_text(record, folder, fmt))
        print(f"report of lab run {ref}: {target}")
        return EXIT_PASS
    text = lab_export_text(record, folder, fmt)
    if out is None:
        sys.stdout.write(text)
        return EXIT_PASS
    write_text_atomic(out, text)
    print(f"{fmt} of lab run {ref} (read from {source}) written to {out}", file=sys.stderr)
    return EXIT_PASS


__all__ = ["LAB_EXPORTS", "cmd_export", "export_lab", "junit_xml", "lab_export_text"]
