"""The inspector in a real browser: Debian's Chromium, headless, driven through playwright
against the real server on 127.0.0.1 (issue 25, "Tests and measurements"): the runs list,
a wave page whose numbers equal results.json, a cell's timeline, a lab run's violations
linked to their events, a comparison equal to ``compare()``, a lab scenario launched from
the form that appears in the history, and a cancelled launch.

Every page is checked to request nothing but this server and to raise no script or policy
error; a screenshot of each is kept (copied to $SABOT_SERVE_SCREENSHOTS when set)."""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from web_helpers import LAB_RUN, Server

from pytest_sabot.commands.lab_compare import lab_comparison
from pytest_sabot.history import list_runs
from pytest_sabot.lab.record import read_run
from pytest_sabot.results.compare import compare, load_side

pytestmark = pytest.mark.slow

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SCREENSHOT_ENV = "SABOT_SERVE_SCREENSHOTS"


class Tab:
    """A page of the signed-in browser with every request and error it made recorded."""

    def __init__(self, context: Any, base: str) -> None:
        self.context, self.base = context, base
        self.requests: list[str] = []
        self.errors: list[str] = []

    def open(self, path: str) -> Any:
        page = self.context.new_page()
        page.on("request", lambda r: self.requests.append(r.url))
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.goto(self.base + path, wait_until="load")
        return page

    def clean(self) -> None:
        assert [u for u in self.requests if not u.startswith((self.base, "data:"))] == []
        assert self.errors == []


@pytest.fixture(scope="module")
def context(served: Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    if not Path(CHROMIUM).is_file():
        pytest.skip(f"Debian's chromium is not installed at {CHROMIUM}")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium")), executable_path=CHROMIUM, headless=True,
            args=FLAGS, viewport={"width": 1280, "height": 900})
        ctx.set_default_timeout(20_000)
        ctx.route("**/*", lambda route: route.continue_()
                  if route.request.url.startswith((served.base, "data:")) else route.abort())
        first = ctx.new_page()  # the first visit: the URL sabot serve prints
        first.goto(served.config.url(), wait_until="load")
        assert first.url == served.base + "/"
        # ``first`` stays open: closing a context's last page ends its browsing session,
        # and the session cookie with it.
        try:
            yield ctx
        finally:
            ctx.close()


@pytest.fixture
def tab(context: Any, served: Server) -> Iterator[Tab]:
    opened = Tab(context, served.base)
    yield opened
    for page in context.pages[1:]:
        page.close()


def shot(page: Any, tmp_path: Path, name: str) -> None:
    path = tmp_path / f"serve-{name}.png"
    page.screenshot(path=str(path), full_page=True)
    target = os.environ.get(SCREENSHOT_ENV)
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, Path(target) / path.name)


def _runs(served: Server) -> list[Any]:
    return list_runs(served.config.history)


def _run_of(served: Server, folder: str) -> str:
    target = str((served.config.root / folder).resolve())
    return next(r.run_id for r in _runs(served) if str(Path(r.out_dir).resolve()) == target)


def _rate_text(rate: dict[str, Any]) -> str:
    if rate["value"] is None:
        return "n/a"
    return (f"{100 * rate['value']:.1f}% [{100 * rate['ci_low']:.1f}, "
            f"{100 * rate['ci_high']:.1f}]")


def test_serve_runs_list_is_the_history_newest_first(
    served: Server, tab: Tab, tmp_path: Path
) -> None:
    page = tab.open("/")
    shot(page, tmp_path, "runs")
    expected = [r.run_id for r in _runs(served)]
    rows = page.locator("#runs-table tr[data-run]").all()
    shown = [row.get_attribute("data-run") for row in rows]
    assert shown == expected and len(shown) == 3
    page.select_option('select[data-filter="kind"]', "lab")
    page.click("#run-filters button[type=submit]")
    page.wait_for_url(re.compile(r"/\?kind=lab"))
    assert [r.get_attribute("data-kind") for r in page.locator("#runs-table tr[data-run]").all()
            ] == ["lab"]
    page.goto(served.base + "/?framework=langgraph&label=keyless")
    assert page.locator("#runs-table tr[data-run]").count() == 2
    tab.clean()


def test_serve_wave_page_numbers_equal_results_json(
    served: Server, tab: Tab, tmp_path: Path
) -> None:
    run_id = _run_of(served, "slice-realistic")
    results = json.loads((served.config.root / "slice-realistic" / "results.json").read_text())
    page = tab.open(f"/run/{run_id}")
    shot(page, tmp_path, "wave")
    rows = results["scoreboard"]["rows"]
    assert page.locator("#scoreboard-table tr[data-row]").count() == len(rows) == 2
    for row in rows:
        name = row["row"]
        for metric in ("sabot_score", "soft_notice", "reaction", "recovery"):
            cell = page.locator(f'#scoreboard-table td[data-row="{name}"][data-metric="{metric}"]')
            assert cell.locator(".value").inner_text() == _rate_text(row[metric])
            assert int(cell.get_attribute("data-k")) == row[metric]["k"]
            assert int(cell.get_attribute("data-n")) == row[metric]["n"]
        valid = page.locator(f'#scoreboard-table td[data-row="{name}"][data-metric="valid"]')
        assert valid.inner_text().strip() == f"{row['valid']} / {row['runs']}"
    # Start here: the same rows, lowest published Sabot Score first.
    lowest = [r.get_attribute("data-row")
              for r in page.locator("#rows-lowest-first tr[data-row]").all()]
    by_score = sorted(rows, key=lambda r: (r["sabot_score"]["value"], r["row"]))
    assert lowest == [r["row"] for r in by_score]
    median = page.locator("#median")
    assert float(median.get_attribute("data-median")) == results["scoreboard"]["median_sabot_score"]
    assert page.locator("details.cell").count() == len(results["cells"])
    tab.clean()


def test_serve_cell_timeline_marks_injection_acts_and_why(
    served: Server, tab: Tab, tmp_path: Path
) -> None:
    """The newcomer's path: the lowest row, its missed cells, one of them and why."""
    run_id = _run_of(served, "slice-realistic")
    results = json.loads((served.config.root / "slice-realistic" / "results.json").read_text())
    page = tab.open(f"/run/{run_id}")
    link = page.locator("#rows-lowest-first a.missed-link").first
    row, count = link.get_attribute("data-row"), int(link.get_attribute("data-missed"))
    link.click()
    page.wait_for_url(re.compile(r"/cells\?"))
    shot(page, tmp_path, "cells")
    listed = [r.get_attribute("data-cell")
              for r in page.locator("#cells-table tr[data-cell]").all()]
    missed = sorted(c["cell_id"] for c in results["cells"] if c.get("detection") == "MISSED"
                    and c.get("excluded") is None and c["row"] == row)
    assert listed == missed and len(listed) == count >= 1
    target = listed[0]
    page.click(f'#cells-table tr[data-cell="{target}"] a')
    page.wait_for_url(re.compile(re.escape(f"/cell/{target}.html")))
    shot(page, tmp_path, "cell")
    events = (served.config.root / "slice-realistic" / "cells" / target / "events.jsonl"
              ).read_text().splitlines()
    assert page.locator("table.timeline tr[id]").count() == len([e for e in events if e.strip()])
    verdict = next(c for c in results["cells"] if c["cell_id"] == target)
    assert page.locator("svg.strip line.inject").count() == 1
    injection = page.locator("table.timeline tr.injection")
    assert injection.locator("td.seq").inner_text() == str(verdict["injection_seq"])
    assert "Missed" in page.locator("#why").inner_text()
    link = page.locator('dd a[href$="events.jsonl"]').first
    assert link.get_attribute("href") == f"/run/{run_id}/file/cells/{target}/events.jsonl"
    tab.clean()


def test_serve_lab_run_violations_link_to_their_events(
    served: Server, tab: Tab, tmp_path: Path
) -> None:
    run_id = _run_of(served, LAB_RUN)
    record = read_run(served.config.root / LAB_RUN / "run.json")
    page = tab.open(f"/run/{run_id}")
    shot(page, tmp_path, "lab")
    assert page.locator("#gate").get_attribute("data-outcome") == record.gate.outcome
    violations = page.locator(".violation")
    assert violations.count() == len(record.gate.violations) >= 1
    first = record.gate.violations[0]
    cites = violations.first.get_attribute("data-cites").split()
    assert cites == [f"ev-{ref.stream}-{ref.id}" for ref in first.evidence]
    violations.first.locator("a").first.click()
    for anchor in cites:
        assert "lit" in page.locator(f"#{anchor}").get_attribute("class")
    # the lab page's own parts: four streams side by side, state changes, coverage,
    # diagnostics; and its exports
    heads = page.locator("#stream-grid [data-stream-head]").all()
    assert [h.get_attribute("data-stream-head") for h in heads] == [
        "requests", "deliveries", "effects", "observations"]
    assert page.locator("#changes .change").count() == len(record.streams.effects)
    assert page.locator("#coverage-table tr[data-entry]").count() == len(record.coverage)
    assert page.locator("#diagnostics .diagnostic").count() >= 1
    assert [a.get_attribute("data-export") for a in page.locator("#run-actions a").all()
            ] == ["html", "json", "junit"]
    tab.clean()


def test_serve_comparison_equals_compare(served: Server, tab: Tab, tmp_path: Path) -> None:
    a_id, b_id = _run_of(served, "slice-realistic"), _run_of(served, "slice-vigilant")
    page = tab.open(f"/run/{a_id}")
    page.select_option("#compare-with", b_id)
    page.click("#compare-form button")
    page.wait_for_url(re.compile(r"/compare\?"))
    shot(page, tmp_path, "compare")
    root = served.config.root
    expected = compare(load_side(root / "slice-realistic"), load_side(root / "slice-vigilant"))
    assert page.locator("#compare-table tr[data-row]").count() == len(expected.rows)
    for row in expected.rows:
        cell = page.locator(f'#compare-table tr[data-row="{row.row}"] td[data-metric="difference"]')
        assert float(cell.get_attribute("data-value")) == row.difference
        flips = page.locator(f'#compare-table tr[data-row="{row.row}"] td[data-metric="b_only"]')
        assert int(flips.inner_text()) == row.detected_b_only
    assert page.locator("#paired-total").inner_text() == str(expected.paired)
    # every flipped cell links to its page in each run; following one opens that cell
    flips = page.locator("li.flip")
    assert flips.count() == expected.detected_a_only + expected.detected_b_only >= 1
    cell = flips.first.get_attribute("data-cell")
    for side, run_id in (("A", a_id), ("B", b_id)):
        link = flips.first.locator(f'a[data-cell-page="{side}"]')
        assert link.get_attribute("href") == f"/run/{run_id}/cell/{cell}.html"
    flips.first.locator('a[data-cell-page="B"]').click()
    page.wait_for_url(re.compile(re.escape(f"/run/{b_id}/cell/{cell}.html")))
    assert page.locator("#why").count() == 1
    # a lab run is never paired with a scored run: the page says why
    tab.clean()
    lab_id = _run_of(served, LAB_RUN)
    with served.client() as client:
        refused = client.get("/compare", params={"a": a_id, "b": lab_id})
    assert refused.status_code == 400
    assert f"{lab_id} is not: compare two scored runs or two lab runs" in refused.text


def test_serve_launched_lab_scenario_appears_in_the_history(
    served: Server, tab: Tab, tmp_path: Path
) -> None:
    before = {r.run_id for r in _runs(served)}
    page = tab.open("/launch")
    shot(page, tmp_path, "launch")
    page.select_option("#lab-scenario", "helpdesk/lost-create-response")
    page.select_option("#lab-agent", "builtin:naive")
    page.click("#lab-launch")
    page.wait_for_url(re.compile(r"/launch/serve-lab-"))
    command = page.locator("#command").inner_text()
    assert " -m pytest_sabot lab run helpdesk/lost-create-response --agent builtin:naive" in command
    page.wait_for_selector('#launch-status[data-status="finished"]', timeout=60_000)
    shot(page, tmp_path, "launched")
    assert page.locator("#launch-status").get_attribute("data-exit") == "1"  # the gate: FAIL
    assert "LS1" in page.locator("#log").inner_text()  # the progress streamed to the page
    run_id = page.locator("#launch-run").get_attribute("data-run")
    after = {r.run_id for r in _runs(served)}
    assert after - before == {run_id}
    page.click("#launch-run a")
    page.wait_for_url(f"**/run/{run_id}")
    assert page.locator("#gate").get_attribute("data-outcome") == "fail"
    page = tab.open("/")
    assert page.locator(f'#runs-table tr[data-run="{run_id}"]').count() == 1
    # two lab runs now: the runs list pairs them, as the lab compare does
    first = _run_of(served, LAB_RUN)
    page.select_option("#compare-lab select[name=a]", first)
    page.select_option("#compare-lab select[name=b]", run_id)
    page.click("#compare-lab button")
    page.wait_for_url(re.compile(r"/compare\?"))
    shot(page, tmp_path, "lab-compare")
    expected = lab_comparison(first, run_id, served.config.history)
    verdict = page.locator("#verdict")
    assert verdict.get_attribute("data-gate-change") == expected.gate_change == "same"
    assert verdict.get_attribute("data-regressed") == "false"
    assert page.locator("#lab-compare-coverage tr[data-entry]").count() == len(expected.coverage)
    assert (page.locator("#no-divergence").count() == 1) == (expected.first_divergence is None)
    tab.clean()


def test_serve_cancelled_launch_stops_its_run(served: Server, tab: Tab, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # The history entry of the cancelled run is looked up slowly, as on a loaded machine:
    # the page the cancel redirects to must still follow the run until its exit is known.
    launches = served.server.config.app.state.sabot.launches  # type: ignore[attr-defined]
    lookup = launches._recorded_run

    def slow_lookup(out: Path) -> str | None:
        time.sleep(1.5)
        return lookup(out)

    monkeypatch.setattr(launches, "_recorded_run", slow_lookup)
    page = tab.open("/launch?wave=1")
    for name, value in (("framework", "langgraph"), ("config", "default"),
                        ("operator", "baseline"), ("operator", "O1"), ("task", "T1"),
                        ("seed", "11")):
        page.check(f'#wave-form input[name="{name}"][value="{value}"]')
    page.click("#wave-launch")
    page.wait_for_url(re.compile(r"/launch/serve-wave-"))
    launch_id = page.url.rsplit("/", 1)[1]
    assert "--sabot-framework=langgraph" in page.locator("#command").inner_text()
    page.click("#cancel")
    # A selector, not a script: the inspector's policy forbids evaluating strings.
    page.wait_for_selector('#launch-status[data-status="cancelled"]:not([data-exit=""])',
                           timeout=30_000)
    shot(page, tmp_path, "cancelled")
    launch = served_launch(served, launch_id)
    assert launch.status == "cancelled" and launch.process is not None
    assert launch.process.returncode is not None and launch.process.returncode != 0
    tab.clean()


def served_launch(served: Server, launch_id: str) -> Any:
    state = served.server.config.app.state.sabot  # type: ignore[attr-defined]
    return state.launches.all[launch_id]
