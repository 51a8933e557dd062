"""Lab runs in the inspector, over real HTTP on 127.0.0.1 (issue 25): a lab run's page is
the lab's own page (lab_run.html.j2 and its macros, not a copy), two lab runs are compared
by the function ``sabot compare A B`` uses, the runs list offers lab against lab, and a lab
run exports as html, json and JUnit exactly as ``sabot export`` writes them."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from web_helpers import Server, lab_output

from pytest_sabot.commands.cli import main as sabot
from pytest_sabot.commands.lab_compare import lab_comparison
from pytest_sabot.history import index_output, list_runs
from pytest_sabot.lab.controllers import resolve_agent
from pytest_sabot.lab.engine import run_scenario
from pytest_sabot.lab.record import read_run
from pytest_sabot.lab.scenario_load import load_scenario, resolve_scenario
from pytest_sabot.report.html import render_lab_record

AGENTS = {"naive": "builtin:naive", "resilient": "builtin:resilient"}


@pytest.fixture(scope="module")
def lab_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An output root with two lab runs of lost-create-response (the naive controller's
    fails its gate, the resilient one's passes), indexed in its history."""
    return lab_output(tmp_path_factory.mktemp("labs") / "reports", AGENTS)


@pytest.fixture(scope="module")
def server(lab_root: Path) -> Iterator[Server]:
    with Server(lab_root, project=lab_root.parent) as running:
        yield running


@pytest.fixture(scope="module")
def ids(lab_root: Path) -> dict[str, str]:
    """name -> run id in the history."""
    found = {}
    for run in list_runs(lab_root / "history.sqlite"):
        found[Path(run.out_dir).name] = run.run_id
    assert set(found) == set(AGENTS)
    return found


def _body(html: str) -> str:
    """What a page shows between its shared head and its script."""
    return html.split("</svg>", 1)[1].rsplit("<script>", 1)[0].strip()


def test_serve_lab_page_is_the_lab_run_page(server: Server, lab_root: Path,
                                            ids: dict[str, str]) -> None:
    record = read_run(lab_root / "naive" / "run.json")
    with server.client() as client:
        page = client.get(f"/run/{ids['naive']}")
    assert page.status_code == 200, page.text
    own = _body(render_lab_record(record))
    assert own in page.text  # the lab page itself, whole, below the inspector's bar
    for section in ("gate", "diagnostics", "violations", "coverage", "changes", "execution",
                    "streams", "task", "limits"):
        assert f'id="{section}"' in page.text, section
    assert page.text.index('id="servebar"') < page.text.index(own)
    # the four streams side by side, each violation citing the events it names
    assert re.findall(r'data-stream-head="(\w+)"', page.text) == [
        "requests", "deliveries", "effects", "observations"]
    first = record.gate.violations[0]
    cites = " ".join(f"ev-{r.stream}-{r.id}" for r in first.evidence)
    assert f'data-cites="{cites}"' in page.text


def test_serve_lab_compare_is_sabot_compare(server: Server, lab_root: Path,
                                            ids: dict[str, str],
                                            capsys: pytest.CaptureFixture[str]) -> None:
    history = lab_root / "history.sqlite"
    for a, b in (("naive", "resilient"), ("resilient", "naive")):
        code = sabot(["compare", ids[a], ids[b], "--json", "--history", str(history)])
        printed = json.loads(capsys.readouterr().out)
        expected = lab_comparison(ids[a], ids[b], history)
        assert printed == json.loads(expected.model_dump_json())  # the same function
        with server.client() as client:
            page = client.get("/compare", params={"a": ids[a], "b": ids[b]}).text
        assert f'data-regressed="{"true" if expected.regressed else "false"}"' in page
        assert f'data-gate-change="{expected.gate_change}"' in page
        assert f"(exit {code})" in page
        for block, rules in (("violations-added", expected.violations_added),
                             ("violations-removed", expected.violations_removed)):
            part = page.split(f'id="{block}"', 1)[1].split("</div>", 1)[0]
            assert re.findall(r'<li data-rule="([^"]+)"', part) == rules, block
        assert len(expected.violations_added) + len(expected.violations_removed) >= 1
        for row in expected.coverage:
            assert (f'data-entry="{row.id}" data-differs="{"true" if row.differs else "false"}"'
                    in page)
        for reason in expected.reasons:
            assert f"<li>{reason}</li>" in html.unescape(page)
        d = expected.first_divergence
        assert d is not None
        assert f'id="first-divergence" data-position="{d.position}"' in page
    assert code == 1  # resilient -> naive regresses: the page said exit 1 too


def test_serve_runs_list_offers_lab_against_lab(server: Server, ids: dict[str, str]) -> None:
    with server.client() as client:
        page = client.get("/").text
    assert 'id="compare-lab"' in page
    lab_form = page.split('id="compare-lab"', 1)[1].split("</form>", 1)[0]
    assert sorted(re.findall(r'<option value="([^"]+)"', lab_form)) == sorted(
        [*ids.values(), *ids.values()])
    assert 'id="compare-scored"' not in page  # no two scored runs here to pair


@pytest.mark.parametrize("fmt", ["html", "json", "junit"])
def test_serve_lab_exports_are_sabot_export(server: Server, lab_root: Path,
                                            ids: dict[str, str], fmt: str,
                                            tmp_path: Path) -> None:
    run_id = ids["naive"]
    out = tmp_path / f"export.{fmt}"
    assert sabot(["export", run_id, "--format", fmt, "--out", str(out),
                  "--history", str(lab_root / "history.sqlite")]) == 0
    with server.client() as client:
        page = client.get(f"/run/{run_id}").text
        assert f'href="/run/{run_id}/export?format={fmt}"' in page
        got = client.get(f"/run/{run_id}/export", params={"format": fmt})
    assert got.status_code == 200, got.text
    assert got.text == out.read_text(encoding="utf-8")
    assert got.headers["content-disposition"].startswith("attachment;")
    if fmt == "json":
        assert got.text == (lab_root / "naive" / "run.json").read_text(encoding="utf-8")


def test_serve_lab_export_refuses_an_unknown_format(server: Server,
                                                    ids: dict[str, str]) -> None:
    with server.client() as client:
        got = client.get(f"/run/{ids['naive']}/export", params={"format": "pdf"})
    assert got.status_code == 400
    assert "html, json or junit" in got.text


def test_serve_kept_pages_follow_the_history(tmp_path: Path) -> None:
    """Pages kept rendered are keyed by what they were made from: a run recorded after a
    page was shown appears on it at the next request (runs list, "Compare with")."""
    root = tmp_path / "reports"
    scenario = load_scenario(resolve_scenario("lost-create-response"))
    run_scenario(scenario, resolve_agent("builtin:naive"), root / "first")
    index_output(root, root / "history.sqlite")
    (first,) = [r.run_id for r in list_runs(root / "history.sqlite")]
    with Server(root, project=tmp_path) as server, server.client() as client:
        before = client.get(f"/run/{first}").text
        assert 'id="compare-with"' not in before  # no other lab run yet
        assert client.get("/").text.count('data-kind="lab"') == 1
        run_scenario(scenario, resolve_agent("builtin:resilient"), root / "second")
        index_output(root, root / "history.sqlite")
        second = next(r.run_id for r in list_runs(root / "history.sqlite")
                      if r.run_id != first)
        after = client.get(f"/run/{first}").text
        assert f'<option value="{second}">' in after
        assert _body(render_lab_record(read_run(root / "first" / "run.json"))) in after
        runs = client.get("/").text
        assert runs.count('data-kind="lab"') == 2
        assert f'href="/run/{second}"' in runs
