"""The HTML report in a real browser: Debian's Chromium, headless, opening the files from
file:// exactly as a reader would (issue 13, "The HTML report").

Every page is checked to make no request beyond local files and inline data, and to raise
no script or policy error. The numbers in the DOM are compared with results.json (and
with ``compare()`` for the compare page, with the lab record for the lab page)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from report_helpers import Browser, copy_run, keep_screenshot

from pytest_sabot.lab.record import LabRun
from pytest_sabot.report.html import (
    write_compare_html,
    write_lab_html,
    write_results_html,
)
from pytest_sabot.results.compare import compare, load_side

pytestmark = pytest.mark.slow


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def _rate_text(rate: dict[str, Any]) -> str:
    if rate["value"] is None:
        return "n/a"
    return f"{_pct(rate['value'])} [{100 * rate['ci_low']:.1f}, {100 * rate['ci_high']:.1f}]"


def _clean(browser: Browser) -> None:
    assert browser.left_the_page() == []
    assert browser.errors == []
    assert browser.requests, "the browser recorded no request at all"


def test_S2_8_numbers_in_the_dom_equal_results_json(
    wave_slice: Path, browser: Browser, tmp_path: Path, record_property: Any
) -> None:
    report = write_results_html(wave_slice, tmp_path / "report.html")
    results = json.loads((wave_slice / "results.json").read_text())
    page = browser.open(report.as_uri())
    board = results["scoreboard"]
    assert len(board["rows"]) == 6
    assert page.locator("#scoreboard-table tr[data-row]").count() == 6
    for row in board["rows"]:
        name = row["row"]
        valid = page.locator(f'td[data-row="{name}"][data-metric="valid"]')
        assert valid.inner_text().strip() == f"{row['valid']} / {row['runs']}"
        assert int(valid.get_attribute("data-valid")) == row["valid"]
        for metric in ("sabot_score", "soft_notice", "reaction", "reaction_causal",
                       "recovery", "recovery_without_detection"):
            rate = row[metric]
            cell = page.locator(f'#scoreboard-table td[data-row="{name}"][data-metric="{metric}"]')
            assert cell.locator(".value").inner_text() == _rate_text(rate), (name, metric)
            assert int(cell.get_attribute("data-k")) == rate["k"]
            assert int(cell.get_attribute("data-n")) == rate["n"] == row["valid"]
            for attribute, key in (("data-value", "value"), ("data-ci-low", "ci_low"),
                                   ("data-ci-high", "ci_high")):
                assert float(cell.get_attribute(attribute)) == rate[key], (name, metric, key)
        gap = page.locator(f'td[data-row="{name}"][data-metric="override_gap"]')
        assert float(gap.get_attribute("data-value")) == row["override_gap"]
        assert gap.inner_text().strip() == f"{100 * row['override_gap']:+.1f} pp"
        funnel = page.locator(f'svg.funnel[data-row="{name}"]')
        assert int(funnel.locator('rect[data-segment="hard"]').get_attribute(
            "data-count")) == row["sabot_score"]["k"]
    median = page.locator("#median")
    assert float(median.get_attribute("data-median")) == board["median_sabot_score"]
    # A slice of the wave is a partial board: its median is never the wave's, no band.
    assert median.get_attribute("data-band") == ""
    assert (f"Median Sabot Score of this partial board: {_pct(board['median_sabot_score'])}"
            in median.inner_text())
    assert page.locator("[data-partial]").count() == 1
    assert page.locator("[data-partial-table]").count() >= 4
    assert page.locator("#label").inner_text().strip() == results["label"]
    assert page.locator("details.cell").count() == len(results["cells"])
    shot = keep_screenshot(page, tmp_path, "report-wave1-slice.png")
    record_property("screenshot", str(shot))
    print(f"screenshot: {shot}")
    assert shot.stat().st_size > 10_000
    _clean(browser)


def test_S1_6_a_cell_drill_down_opens_with_its_timeline(
    wave_slice: Path, browser: Browser, tmp_path: Path
) -> None:
    results = json.loads((wave_slice / "results.json").read_text())
    hard = next(c for c in results["cells"] if c.get("detection") == "DETECTED_HARD")
    report = write_results_html(wave_slice, tmp_path / "report.html", layout="inline")
    page = browser.open(report.as_uri())
    cell = page.locator(f'details.cell[data-cell="{hard["cell_id"]}"]')
    assert cell.get_attribute("open") is None
    cell.locator("summary").click()
    assert cell.get_attribute("open") is not None
    events = (wave_slice / "cells" / hard["cell_id"] / "events.jsonl").read_text().splitlines()
    rows = cell.locator("table.timeline tr[id]")
    assert rows.count() == len(events)
    assert rows.first.is_visible()
    injection = cell.locator("table.timeline tr.injection")
    assert injection.count() == 1
    assert injection.locator(".seq").inner_text() == str(hard["injection_seq"])
    detecting = cell.locator("table.timeline tr.detecting")
    assert detecting.locator(".seq").inner_text() == str(hard["detecting_seq"])
    assert cell.locator("svg.strip path.actmark.detecting").count() == 1
    assert cell.locator("svg.strip line.inject").count() == 1
    # A link from elsewhere in the page (the exclusion appendix, a heatmap box) opens the
    # cell it points at.
    other = next(c for c in results["cells"] if c["cell_id"] != hard["cell_id"])
    page.evaluate("(id) => { location.hash = 'cell-' + id; }", other["cell_id"])
    # Selectors, not scripts: the page's policy forbids evaluating strings while polling.
    page.locator(f'details[data-cell="{other["cell_id"]}"][open]').wait_for()
    _clean(browser)


def test_S1_6_cell_pages_open_from_the_report(
    wave_slice: Path, browser: Browser, tmp_path: Path
) -> None:
    report = write_results_html(wave_slice, tmp_path / "out" / "report.html", layout="pages")
    pages = sorted((tmp_path / "out" / "report-cells").glob("*.html"))
    results = json.loads((wave_slice / "results.json").read_text())
    assert len(pages) == len(results["cells"])
    page = browser.open(report.as_uri())
    assert page.locator("table.timeline").count() == 0
    cell = page.locator("details.cell").nth(3)
    cell_id = cell.get_attribute("data-cell")
    cell.locator("summary").click()
    with page.expect_navigation(wait_until="load"):
        cell.locator("a.timeline-link").click()
    assert page.url.endswith(f"/report-cells/{cell_id}.html")
    events = (wave_slice / "cells" / cell_id / "events.jsonl").read_text().splitlines()
    assert page.locator("table.timeline tr[id]").count() == len(events)
    # The raw trace is one relative link away, from the report's folder elsewhere.
    trace = page.locator("dl.facts a").filter(has_text="events.jsonl").first
    target = page.evaluate("(a) => a.href", trace.element_handle())
    assert Path(target.removeprefix("file://")).resolve() == (
        wave_slice / "cells" / cell_id / "events.jsonl"
    ).resolve()
    _clean(browser)


def test_planted_script_in_a_trace_is_shown_as_text_and_never_runs(
    wave_slice: Path, browser: Browser, tmp_path: Path
) -> None:
    run = copy_run(wave_slice, tmp_path / "run")
    results = json.loads((run / "results.json").read_text())
    target = next(c for c in results["cells"] if c.get("kind") == "fault")["cell_id"]
    trace = run / "cells" / target / "events.jsonl"
    planted = ('<script>window.sabotPwned = 1</script><img src="x" '
               'onerror="window.sabotPwned = 2">')
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    review = next(e for e in events if e["kind"] in ("review", "agent_output"))
    review["text"] = planted + "\n" + review["text"]
    review["component"] = "<b>reviewer</b>"
    trace.write_text("".join(json.dumps(e) + "\n" for e in events))
    report = write_results_html(run, layout="inline")
    page = browser.open(report.as_uri())
    page.locator(f'details.cell[data-cell="{target}"] > summary').click()
    assert page.evaluate("typeof window.sabotPwned") == "undefined"
    assert page.locator("script").count() == 1  # the report's own
    assert page.locator("img").count() == 0
    assert page.locator("b", has_text="reviewer").count() == 0
    shown = page.locator(f'details.cell[data-cell="{target}"]').inner_text()
    assert planted in shown and "<b>reviewer</b>" in shown
    _clean(browser)


def test_lab_page_shows_four_streams_and_links_each_violation_to_its_events(
    lab_run: tuple[Path, LabRun], browser: Browser, tmp_path: Path
) -> None:
    path, record = lab_run
    report = write_lab_html(path, tmp_path / "lab.html")
    page = browser.open(report.as_uri())
    heads = page.locator("[data-stream-head]")
    assert [heads.nth(i).get_attribute("data-stream-head") for i in range(heads.count())] == [
        "requests", "deliveries", "effects", "observations"]
    for stream in ("requests", "deliveries", "effects", "observations"):
        assert page.locator(f'.ev[data-stream="{stream}"]').count() == len(
            getattr(record.streams, stream))
    assert page.locator("#gate").get_attribute("data-outcome") == record.gate.outcome == "fail"
    assert [v.rule for v in record.gate.violations] == ["LS1", "LC1"]
    for number, violation in enumerate(record.gate.violations, start=1):
        shown = page.locator(f"#violation-{number}")
        assert shown.get_attribute("data-rule") == violation.rule
        links = shown.locator("a.evidence")
        assert links.count() == len(violation.evidence)
        for i, ref in enumerate(violation.evidence):
            link = links.nth(i)
            link.click()
            assert page.evaluate("location.hash") == f"#ev-{ref.stream}-{ref.id}"
            event = page.locator(f"#ev-{ref.stream}-{ref.id}")
            assert event.get_attribute("data-stream") == ref.stream
            assert event.is_visible()
            assert event.evaluate("(e) => e.matches(':target')")
        # Following the violation itself lights every event it cites.
        shown.locator("a").first.click()
        page.locator(f".ev.lit >> nth={len(violation.evidence) - 1}").wait_for()
        lit = page.locator(".ev.lit")
        assert sorted(lit.nth(i).get_attribute("id") for i in range(lit.count())) == sorted(
            f"ev-{ref.stream}-{ref.id}" for ref in violation.evidence)
    keep_screenshot(page, tmp_path, "report-lab-lost-create-response.png")
    _clean(browser)


def test_S10_5_3_compare_page_shows_the_paired_rows_of_compare(
    wave_slice: Path, vigilant_slice: Path, browser: Browser, tmp_path: Path
) -> None:
    report = write_compare_html(wave_slice, vigilant_slice, tmp_path / "compare.html")
    expected = compare(load_side(wave_slice), load_side(vigilant_slice),
                       a_path=str(wave_slice), b_path=str(vigilant_slice))
    page = browser.open(report.as_uri())
    assert page.locator("#compare-table tr[data-row]").count() == len(expected.rows)
    for row in expected.rows:
        shown = page.locator(f'#compare-table tr[data-row="{row.row}"]')
        assert int(shown.locator('[data-metric="paired"]').inner_text()) == row.paired
        assert int(shown.locator('[data-metric="a_only"]').inner_text()) == row.detected_a_only
        assert int(shown.locator('[data-metric="b_only"]').inner_text()) == row.detected_b_only
        assert int(shown.locator('[data-metric="one_sided"]').inner_text()) == row.one_sided
        diff = shown.locator('[data-metric="difference"]')
        if row.difference is None:
            assert diff.get_attribute("data-value") == ""
        else:
            assert float(diff.get_attribute("data-value")) == row.difference
            assert float(diff.get_attribute("data-ci-low")) == row.ci_low
            assert float(diff.get_attribute("data-ci-high")) == row.ci_high
        flips = page.locator(f'#flips-{row.row} li.flip')
        assert flips.count() == row.detected_a_only + row.detected_b_only
    assert expected.paired > 0 and expected.one_sided
    assert page.locator("#one-sided tr").count() == len(expected.one_sided) + 1
    assert page.locator('[data-mismatch="model"]').count() == 1
    _clean(browser)


def test_every_demo_controller_leaves_a_report_html_that_opens_offline(
    browser: Browser, tmp_path: Path
) -> None:
    """``sabot lab demo --out D`` leaves D/<controller>/report.html: in a real browser from
    file://, each page shows its gate, explains its recorded failures, its coverage and its
    state changes, and makes no request beyond the file."""
    from pytest_sabot.commands.lab import main as lab_main
    from pytest_sabot.lab.record import read_run

    out = tmp_path / "demo"
    assert lab_main(["demo", "--out", str(out)], history=False) == 0
    for controller in ("naive", "resilient", "noop"):
        record = read_run(out / controller)
        page = browser.open((out / controller / "report.html").as_uri())
        assert page.locator("#gate").get_attribute("data-outcome") == record.gate.outcome
        failures = page.locator('#diagnostics .diagnostic[data-family="failure"]')
        assert failures.count() == len(record.gate.violations)
        assert page.locator("#changes .change").count() == len(record.streams.effects)
        rows = page.locator("#coverage-table tr[data-entry]")
        assert [rows.nth(i).get_attribute("data-status") for i in range(rows.count())] == [
            c.status for c in record.coverage]
        assert page.locator('#execution-table [data-field="routed_calls"]').inner_text() == str(
            record.measurement.routed_calls)
        assert page.locator('#limits .diagnostic[data-family="limit"]').count() >= 1
        if controller == "naive":  # the duplicate ticket, explained by its events
            ls1 = failures.first
            assert "LS1" in ls1.inner_text() and "operation key" in ls1.inner_text()
            ls1.locator("a").first.click()
            assert page.evaluate("location.hash").startswith("#ev-")
        keep_screenshot(page, tmp_path, f"report-lab-demo-{controller}.png")
        _clean(browser)
        browser.reset()
