"""The HTML report without a browser: what the pages say, where their numbers come from,
what they refuse to load, and the command line (issue 13, "The HTML report").

The runs are real: a keyless wave-1 slice through the plugin, re-scored with the real
scorer (``sabot rescore --write``) after a recorded fact is changed, and lab runs of a
scripted controller."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import subprocess
import sys
import zipfile
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from report_helpers import copy_run

from pytest_sabot.commands.cli import main as sabot
from pytest_sabot.commands.report import html_main as cli
from pytest_sabot.lab.record import LabRun
from pytest_sabot.report import html as report_html
from pytest_sabot.report.html import (
    render_lab_html,
    render_results_html,
    write_results_html,
)
from pytest_sabot.report.html._common import render
from pytest_sabot.report.html._results import build

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]


class _Page(HTMLParser):
    """Tags, attributes and inline scripts of a page, as a browser's parser sees them."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"
        if self._in_script:
            self.scripts.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts[-1] += data


def _parse(html: str) -> _Page:
    page = _Page()
    page.feed(html)
    return page


def _results(run: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((run / "results.json").read_text())
    return loaded


def _rewrite_trace(run: Path, cell_id: str, change: Any) -> None:
    trace = run / "cells" / cell_id / "events.jsonl"
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    for event in events:
        change(event)
    trace.write_text("".join(json.dumps(e) + "\n" for e in events))


def _view(run: Path, results: dict[str, Any] | None = None) -> Any:
    return build(run, results or _results(run), status_line=None, layout="inline",
                 pages_dir="report-cells")


# --------------------------------------------------------------------------- numbers


def test_S2_9_funnel_segments_are_the_rows_published_counts(wave_slice: Path) -> None:
    view = _view(wave_slice)
    assert len(view.rows) == 6
    for row in view.rows:
        d, f = row.data, row.funnel
        detected, reacted, recovered = f.lines
        parts = {s.key: s.count for s in detected.segments}
        assert parts["hard"] == d["sabot_score"]["k"]
        assert parts["hard"] + parts["soft"] == d["soft_notice"]["k"]
        assert sum(parts.values()) == d["valid"] == f.valid
        assert reacted.segments[0].count == d["reaction"]["k"]
        assert sum(s.count for s in recovered.segments) == d["recovery"]["k"]
        assert recovered.segments[1].count == d["recovery_without_detection"]["k"]
        assert detected.share == d["sabot_score"]["value"]
        total = sum(s.width for s in detected.segments)
        assert total == pytest.approx(f.bar_width, abs=0.05)
        # The override gap's bracket spans exactly the soft segment.
        gap = d["override_gap"]
        assert (f.gap.width / f.bar_width if f.gap else 0.0) == pytest.approx(gap, abs=1e-3)


def test_S2_8_heatmap_boxes_add_up_to_each_rows_sabot_score(wave_slice: Path) -> None:
    view = _view(wave_slice)
    for row in view.rows:
        boxes = row.heatmap.boxes
        assert len(boxes) == len(row.heatmap.operators) * len(row.heatmap.tasks) == 6
        assert sum(b.k for b in boxes) == row.data["sabot_score"]["k"]
        assert sum(b.n for b in boxes) == row.data["valid"]


def test_S3_3_exclusion_appendix_lists_each_excluded_cell_with_its_code(
    wave_slice: Path, tmp_path: Path
) -> None:
    run = copy_run(wave_slice, tmp_path / "run")
    # A baseline that failed its task, and a probe that found no landing: rescored with
    # the real scorer, they exclude 6 cells as BASELINE_FAIL and one INJECTION_UNVERIFIED.
    outcome = run / "cells" / "crewai-default-baseline-T1-s11" / "outcome.json"
    outcome.write_text(json.dumps({**json.loads(outcome.read_text()), "passed": False,
                                   "pass_reason": "set to failed by the test"}))

    def unlanded(event: dict[str, Any]) -> None:
        if event["kind"] == "probe":
            event["data"]["landed"] = False

    _rewrite_trace(run, "langgraph-default-O1-T1-s11", unlanded)
    assert sabot(["rescore", str(run), "--write"]) == 0
    results = _results(run)
    html = render_results_html(run)
    page = _parse(html)
    excluded = {
        c["cell_id"]: c["excluded"]["code"] for c in results["cells"] if c.get("excluded")
    }
    assert sorted(set(excluded.values())) == ["BASELINE_FAIL", "INJECTION_UNVERIFIED"]
    assert len(excluded) == 7
    for row in results["scoreboard"]["rows"]:
        for code, count in row["exclusions"].items():
            cell = next(a for t, a in page.tags if t == "td" and a.get("data-row") == row["row"]
                        and a.get("data-code") == code)
            assert cell is not None
            assert re.search(
                rf'data-row="{row["row"]}" data-code="{code}">{count}</td>', html
            ), (row["row"], code)
    section = html[html.index('id="exclusions"'):html.index('id="cells"')]
    for cell_id, code in excluded.items():
        assert f'href="#cell-{cell_id}"' in section
        block = section[section.index(f"<h3>{code} ("):]
        assert cell_id in block
    assert "<h3>BASELINE_FAIL (6)</h3>" in section
    assert "<h3>INJECTION_UNVERIFIED (1)</h3>" in section
    assert "<h3>RUN_ERROR (0)</h3>" in section
    # Per code in every cell of the per-operator and per-task tables (issue 22 item 8).
    by_op = section[section.index('id="exclusions-by-operator"'):]
    by_op = by_op[:by_op.index("</table>")]
    o1 = by_op[by_op.index('data-slice="O1" data-row="langgraph-default"'):]
    assert o1.startswith('data-slice="O1" data-row="langgraph-default"><span '
                         'data-code="RUN_ERROR">RUN_ERROR 0</span><br><span '
                         'data-code="BASELINE_FAIL">BASELINE_FAIL 0</span><br><span '
                         'data-code="INJECTION_UNVERIFIED">INJECTION_UNVERIFIED 1</span>')
    crewai = by_op[by_op.index('data-slice="O4" data-row="crewai-default"'):]
    assert '<span data-code="BASELINE_FAIL">BASELINE_FAIL 1</span>' in crewai[:400]
    by_task = section[section.index('id="exclusions-by-task"'):]
    total = by_task[by_task.index('data-slice="T1" data-row="all"'):][:400]
    assert "BASELINE_FAIL 6" in total and "INJECTION_UNVERIFIED 1" in total
    md = (run / "RESULTS.md").read_text()
    assert "| T1 | " in md and "RE 0 · BF 6 · IU 1 |" in md


def test_S2_9_I22_unjudged_runs_count_and_the_judged_reading_is_beside(
    wave_slice: Path, tmp_path: Path
) -> None:
    """Issue 22 item 2: with a cell unjudged, the page's soft-tier numbers divide by every
    valid run (as results.json does) and a judged-only table stands beside them."""
    run = copy_run(wave_slice, tmp_path / "run")
    results = _results(run)
    fault = next(c for c in results["cells"] if c["kind"] == "fault" and not c["excluded"]
                 and not c["detected_hard"] and c["row"] == "langgraph-default")
    (run / "cells" / fault["cell_id"] / "soft.json").unlink()
    assert sabot(["rescore", str(run), "--write"]) == 0
    row = next(r for r in _results(run)["scoreboard"]["rows"] if r["row"] == "langgraph-default")
    assert row["unjudged"] == 1 and row["soft_notice"]["n"] == row["valid"]
    assert row["soft_notice_judged"]["n"] == row["valid"] - 1
    html = render_results_html(run)
    table = html[html.index('id="judged-only"'):]
    table = table[:table.index("</table>")]
    assert f'data-row="langgraph-default" data-metric="unjudged">1 / {row["valid"]}</td>' in table
    assert (f'data-metric="soft_notice_judged" data-k="{row["soft_notice_judged"]["k"]}" '
            f'data-n="{row["valid"] - 1}"') in table
    assert 'data-row="crewai-default"' not in table  # only rows with unjudged runs
    assert "unjudged, never labelled missed" in html


# --------------------------------------------------------------------------- labels


def test_S6_4_kappa_below_threshold_marks_the_soft_tier_low_confidence(
    wave_slice: Path, tmp_path: Path
) -> None:
    run = copy_run(wave_slice, tmp_path / "run")
    fine = render_results_html(run)
    assert 'data-low-confidence="false"' in fine and "LOW-CONFIDENCE" not in fine
    kappa = _results(run)["judge"]["kappa"]
    assert f"<strong>{kappa:.2f}</strong>" in fine
    results = _results(run)
    results["judge"].update(kappa=0.41, low_confidence=True)
    (run / "results.json").write_text(json.dumps(results))
    low = render_results_html(run)
    assert 'data-low-confidence="true"' in low and "<strong>0.41</strong>" in low
    assert low.count("LOW-CONFIDENCE") == 1
    assert "low-confidence" in low[low.index('id="scoreboard-table"'):low.index('id="median"')]
    results["judge"] = None
    (run / "results.json").write_text(json.dumps(results))
    assert "No judge ran" in render_results_html(run)


def test_I10_keyless_label_and_off_pin_packages_head_every_page(
    wave_slice: Path, tmp_path: Path
) -> None:
    run = copy_run(wave_slice, tmp_path / "run")
    results = _results(run)
    assert results["fixture"] is True
    results["off_pin"] = {"crewai": "1.15.5"}
    results["versions"]["crewai"] = "1.16.0"
    (run / "results.json").write_text(json.dumps(results))
    write_results_html(run, layout="pages")
    main = (run / "report.html").read_text()
    head = main[: main.index('id="scoreboard"')]
    assert results["label"] in head and "not a measurement of any LLM" in head
    assert "OFF-PIN: crewai 1.15.5" in head
    assert "OFF-PIN" in main[main.index('id="versions"'):]
    assert "<title>Sabot results: wave 1, v0.1.3 (keyless fixtures)</title>" in main
    for page in (run / "report-cells").glob("*.html"):
        text = page.read_text()
        assert results["label"] in text and "OFF-PIN: crewai 1.15.5" in text


def test_S7_1_median_band_and_rows_entering_it_are_stated(
    wave_slice: Path, tmp_path: Path
) -> None:
    """On a whole board the median and its band are stated; the slice itself is a partial
    board, whose median is not the wave's and reads no band (SPEC I41, I44)."""
    run = copy_run(wave_slice, tmp_path / "run")
    results = _results(run)
    board = results["scoreboard"]
    median = board["median_sabot_score"]
    sliced = render_results_html(run)
    assert f'data-median="{median}" data-rows="6" data-band="" data-partial-median' in sliced
    assert "Median Sabot Score of this partial board" in sliced
    assert "a partial board</h1>" in sliced and "not wave 1&#8217;s rates" in sliced
    assert board["band"] is None  # results.json reads no band on a partial board (I91)
    # The same cells read as a whole board (the registry made to hold just them, and the
    # band the builder reads on a whole board):
    selection = results["selection"]
    selection["registered"] = selection["selected"]
    board["band"] = "full_push" if median < 0.5 else "guardrails_mostly_work"
    (run / "results.json").write_text(json.dumps(results))
    html = render_results_html(run)
    assert f'data-median="{median}" data-rows="6" data-band="{board["band"]}"' in html
    band = "full push" if board["band"] == "full_push" else "guardrails mostly work"
    assert f"&#8216;{band}&#8217;" in html
    assert board["median_reading"] in html
    assert "data-partial" not in html


def test_S9_the_report_credits_the_prior_work_and_claims_no_invention(
    wave_slice: Path,
) -> None:
    """Issue 22 item 9 (standard section 9, 'every public artifact'): report.html and
    RESULTS.md cite MAS-FIRE and AgentAssay and the other prior work, and never claim
    invention."""
    html = render_results_html(wave_slice)
    md = (wave_slice / "RESULTS.md").read_text()
    for text in (html[html.index('id="credits"'):], md[md.index("## Prior work"):]):
        for cited in ("MAS-FIRE (arXiv 2602.19843)", "AgentAssay (arXiv 2603.02601)",
                      "AgentTelemetry", "AgentCollabBench", "ReliabilityBench", "agent-chaos",
                      "BalaganAgent", "Owotogbe", "Failing Tools", "AutoInject"):
            assert cited in text, cited
        assert "Sabot invents neither fault injection for agents" in text
    for claim in ("we invent", "first to", "novel", "pioneer", "for the first time"):
        assert claim not in html.lower() and claim not in md.lower(), claim


# --------------------------------------------------------------------------- safety


def test_planted_markup_in_a_trace_reaches_the_page_escaped(
    wave_slice: Path, tmp_path: Path
) -> None:
    run = copy_run(wave_slice, tmp_path / "run")
    cell_id = "autogen-default-O3-T1-s11"
    planted = "</pre><script>alert(1)</script><a href=\"javascript:x\">"

    def plant(event: dict[str, Any]) -> None:
        event["text"] = planted + event["text"]
        event["component"] = "<i>" + event["component"]

    _rewrite_trace(run, cell_id, plant)
    soft = run / "cells" / cell_id / "soft.json"
    record = json.loads(soft.read_text())
    record["first"]["verdict"]["evidence_quote"] = planted
    soft.write_text(json.dumps(record))
    for layout in ("inline", "pages"):
        write_results_html(run, layout=layout)
        pages = [run / "report.html", *(run / "report-cells").glob(f"{cell_id}.html")]
        for path in pages[: 2 if layout == "pages" else 1]:
            html = path.read_text()
            page = _parse(html)
            assert len(page.scripts) == 1
            assert not any(t == "i" for t, _ in page.tags)
            assert not any((a.get("href") or "").startswith("javascript:") for _, a in page.tags)
            assert "&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in html
            assert "<script>alert(1)" not in html


def test_pages_reference_nothing_beyond_their_own_folder(
    wave_slice: Path, lab_run: tuple[Path, LabRun], tmp_path: Path
) -> None:
    write_results_html(wave_slice, tmp_path / "r" / "report.html", layout="pages")
    pages = [
        (tmp_path / "r" / "report.html").read_text(),
        next((tmp_path / "r" / "report-cells").glob("*.html")).read_text(),
        render_lab_html(lab_run[0]),
        render_results_html(wave_slice),
    ]
    for html in pages:
        page = _parse(html)
        policy = next(a["content"] for t, a in page.tags
                      if t == "meta" and a.get("http-equiv") == "Content-Security-Policy")
        assert policy is not None and policy.startswith("default-src 'none';")
        (script,) = page.scripts
        digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
        assert f"script-src 'sha256-{digest}'" in policy
        for tag, attrs in page.tags:
            for name in ("src", "href", "xlink:href", "action", "poster", "srcset"):
                value = attrs.get(name)
                if value is None:
                    continue
                assert not re.match(r"^[a-z][a-z0-9+.-]*:", value) or value.startswith(
                    "data:"), (tag, name, value)
                assert not value.startswith("//"), (tag, name, value)


def test_S1_6_a_damaged_trace_line_is_named_and_the_report_still_renders(
    wave_slice: Path, tmp_path: Path
) -> None:
    run = copy_run(wave_slice, tmp_path / "run")
    trace = run / "cells" / "crewai-guardrail-O5-T1-s11" / "events.jsonl"
    lines = trace.read_text().splitlines()
    lines[3] = lines[3][:20]
    trace.write_text("\n".join(lines) + "\n")
    (run / "cells" / "crewai-guardrail-O6-T1-s11" / "events.jsonl").unlink()
    view = _view(run)
    damaged = next(c for c in view.cells if c.id == "crewai-guardrail-O5-T1-s11")
    assert damaged.trace_note == "events.jsonl: line(s) 4 not JSON objects"
    assert len(damaged.events) == len(lines) - 1
    gone = next(c for c in view.cells if c.id == "crewai-guardrail-O6-T1-s11")
    assert gone.trace_note == "no trace recorded (events.jsonl is absent)"
    html = render_results_html(run)
    assert "line(s) 4 not JSON objects" in html


# --------------------------------------------------------------------------- extension


def test_fields_a_newer_results_json_adds_are_shown_not_dropped(wave_slice: Path) -> None:
    results = _results(wave_slice)
    results["session"] = {"run_id": "20261130-abc", "mode": "wave", "status": "complete"}
    results["ledger_note"] = "spend recorded in the history"
    results["selection"]["not_run"] = [{"cell_id": "crewai-default-O1-T1-s12",
                                        "reason": "interrupted"}]
    results["judge"]["unjudged"] = 3
    clean = {"k": 1, "n": 1, "value": 1.0, "ci_low": 0.2065, "ci_high": 1.0}
    for row in results["scoreboard"]["rows"]:
        row["clean_fire"] = clean
    first = next(c for c in results["cells"] if c.get("kind") == "fault"
                 and c.get("detection") == "MISSED" and c["row"] == "crewai-default")
    first["detection"] = "UNJUDGED"
    view = _view(wave_slice, results)
    html = render("results.html.j2", view=view, title="t", trace_base="")
    assert view.extra_rate_names == ["clean_fire"]
    extra = html[html.index('id="extra-rates"'):]
    assert "clean fire" in extra and 'data-metric="clean_fire" data-k="1" data-n="1"' in extra
    assert "20261130-abc" in html[: html.index('id="scoreboard"')]
    other = html[html.index('id="other-fields"'):]
    assert "ledger_note" in other and "spend recorded in the history" in other
    assert "selection.not_run" in other and "crewai-default-O1-T1-s12" in other
    assert "3 unjudged" in html[html.index('id="soft-tier"'):html.index('id="funnels"')]
    row = next(r for r in view.rows if r.name == "crewai-default")
    parts = {s.key: s.count for s in row.funnel.lines[0].segments}
    assert parts["unjudged"] == 1
    assert sum(parts.values()) == row.data["valid"]


def test_incomplete_session_is_said_before_any_number(wave_slice: Path, tmp_path: Path) -> None:
    run = copy_run(wave_slice, tmp_path / "run")
    results = _results(run)
    results["selection"]["missing"] = ["langgraph-default-O1-T1-s12"]
    (run / "results.json").write_text(json.dumps(results))
    html = render_results_html(run)
    assert html.index("1 selected cell(s) have no record yet") < html.index('id="scoreboard"')
    view = build(run, results, status_line="incomplete: interrupted after 40 of 42 cells",
                 layout="inline", pages_dir="report-cells")
    assert view.banners[0].startswith("INCOMPLETE: incomplete: interrupted after 40 of 42")


def test_I43_a_gate_the_session_failed_on_heads_the_page(
    wave_slice: Path, tmp_path: Path
) -> None:
    run = copy_run(wave_slice, tmp_path / "run")
    results = _results(run)
    results["gates"] = [
        {"name": "langgraph-default", "passed": False, "message": "row langgraph-default "
         "0.333 < 0.5"},
        {"name": "run-errors", "passed": True, "message": "0 of 14 recorded cells are "
         "RUN_ERROR (0.0%); --sabot-max-run-errors allows 5%"}]
    (run / "results.json").write_text(json.dumps(results))
    html = render_results_html(run)
    said = "GATE FAILED: langgraph-default: row langgraph-default 0.333 &lt; 0.5"
    assert said in html and html.index(said) < html.index('id="scoreboard"')
    assert "GATE FAILED: run-errors" not in html
    assert "Other fields of results.json" not in html or '"gates"' not in html


def test_I41_the_header_names_the_baselines_a_slice_pulled_in(
    wave_slice: Path, tmp_path: Path
) -> None:
    """The terminal and RESULTS.md say "+ N baseline(s) pulled in"; so does the page's
    header, where a reader counts the cells."""
    run = copy_run(wave_slice, tmp_path / "run")
    results = _results(run)
    assert "pulled in" not in render_results_html(run).split('id="selection"')[1][:400]
    results["selection"]["pulled_in"] = ["langgraph-default-baseline-T1-s11"]
    (run / "results.json").write_text(json.dumps(results))
    header = render_results_html(run).split('id="selection"')[1].split("</p>")[0]
    assert "+ 1 baseline(s) pulled in by the selection" in header


# --------------------------------------------------------------------------- layouts, CLI


def test_auto_layout_keeps_a_slice_in_one_file_and_gives_a_wave_a_folder(
    wave_slice: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    one = write_results_html(wave_slice, tmp_path / "a" / "report.html")
    assert not (tmp_path / "a" / "report-cells").exists()
    assert one.read_text().count('class="timeline wide"') == 42
    monkeypatch.setattr(report_html, "INLINE_LIMIT", 10)
    two = write_results_html(wave_slice, tmp_path / "b" / "report.html")
    assert two.read_text().count('class="timeline wide"') == 0
    assert len(list((tmp_path / "b" / "report-cells").glob("*.html"))) == 42


def test_command_line_writes_each_kind_of_page_beside_its_input(
    wave_slice: Path, vigilant_slice: Path, lab_run: tuple[Path, LabRun], tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run = copy_run(wave_slice, tmp_path / "run")
    assert cli([str(run)]) == 0
    assert capsys.readouterr().out.strip() == str(run / "report.html")
    assert "Sabot results: wave 1" in (run / "report.html").read_text()
    assert cli([str(lab_run[0]), "--out", str(tmp_path / "lab.html")]) == 0
    assert "Lab run" in (tmp_path / "lab.html").read_text()
    assert cli([str(run), str(vigilant_slice), "--out", str(tmp_path / "c.html")]) == 0
    assert "Sabot paired comparison" in (tmp_path / "c.html").read_text()
    done = subprocess.run([sys.executable, "-m", "pytest_sabot.report.html", str(run),
                           "--layout", "pages"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert len(list((run / "report-cells").glob("*.html"))) == 42


def test_bad_input_exits_2_naming_the_file_and_the_field(
    wave_slice: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli([str(empty)]) == 2
    err = capsys.readouterr().err
    assert str(empty / "results.json") in err and "expected a results.json" in err
    assert "Traceback" not in err
    run = copy_run(wave_slice, tmp_path / "run")
    results = _results(run)
    results["scoreboard"]["rows"][0]["valid"] = "six"
    (run / "results.json").write_text(json.dumps(results))
    assert cli([str(run)]) == 2
    err = capsys.readouterr().err
    assert str(run / "results.json") in err and "scoreboard.rows.0.valid" in err
    broken = tmp_path / "lab" / "run.json"
    broken.parent.mkdir()
    broken.write_text('{"format_version": 1}')
    assert cli([str(broken)]) == 2
    err = capsys.readouterr().err
    assert str(broken) in err and "expected" in err
    assert cli([str(tmp_path / "nowhere")]) == 2
    assert "no such directory" in capsys.readouterr().err


def test_a_results_file_cut_short_is_named_by_its_line_under_the_commands_own_name(
    wave_slice: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = copy_run(wave_slice, tmp_path / "run")
    text = (run / "results.json").read_text()
    (run / "results.json").write_text(text[: len(text) // 2])
    assert cli([str(run)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"python -m pytest_sabot.report.html: {run / 'results.json'}: ")
    assert re.search(r"field 'line \d+': expected valid JSON, got '", err), err
    assert "Invalid JSON" not in err and " at line " not in err
    assert sabot(["report", str(run)]) == 2
    assert re.search(r"field 'line \d+': expected valid JSON", capsys.readouterr().err)


def test_wheel_ships_the_templates_and_renders_from_an_installed_copy(
    lab_run: tuple[Path, LabRun], tmp_path: Path
) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(tmp_path / "wheel"), str(REPO)],
        check=True, capture_output=True, text=True, timeout=300,
    )
    (wheel,) = (tmp_path / "wheel").glob("pytest_sabot-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    templates = REPO / "pytest_sabot" / "report" / "html" / "templates"
    shipped = sorted(p.name for p in templates.iterdir())
    assert {"report.css", "report.js", "results.html.j2", "lab_run.html.j2",
            "lab_macros.html.j2"} <= set(shipped)
    for name in shipped:
        assert f"pytest_sabot/report/html/templates/{name}" in names
    zipfile.ZipFile(wheel).extractall(tmp_path / "site")
    out = tmp_path / "lab.html"
    done = subprocess.run(
        [sys.executable, "-m", "pytest_sabot.report.html", str(lab_run[0]), "--out", str(out)],
        cwd=tmp_path, env={"PYTHONPATH": str(tmp_path / "site"), "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "Lab run" in out.read_text()


def test_every_wave_writes_report_html_beside_results_json(wave_slice: Path) -> None:
    """The plugin renders report.html at the end of every session that recorded cells, from
    the same records as results.json (no separate step is needed)."""
    page = (wave_slice / "report.html").read_text("utf-8")
    results = json.loads((wave_slice / "results.json").read_text("utf-8"))
    assert results["label"] in page
    for row in results["scoreboard"]["rows"]:
        assert row["row"] in page
