"""SPEC I98 (and I97): a session whose own board is kept apart from its directory's (under
other rules: ``readings/<rules>/``; a slice beside a whole wave: ``slices/<run id>/``) is
recorded in the history with its own results.json, and the history, ``sabot export`` and
the inspector show that board, read against the directory's cell records."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from web_helpers import Server

from pytest_sabot.commands.cli import main
from pytest_sabot.history import load_run_results, resolve_results
from pytest_sabot.results import read_results

# One whole pytest session of a real pipeline, then the inspector over it.
pytestmark = pytest.mark.slow

SLICE = "autogen and guardrail and O1 and T2 and s12"
CELL = "autogen-guardrail-O1-T2-s12"
# What only the reading's pages say (the wave's own board says "Rules v0.1.3.").
READING = "Rules v0.2.1 (the wave is registered under v0.1.3)"


@pytest.fixture(scope="module")
def reading(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """(the output root, the run id) of one session under v0.2.1, wave 1 registering
    v0.1.3, recorded in root/history.sqlite as it ended."""
    base = tmp_path_factory.mktemp("apart")
    root = base / "reports"
    out = root / "wave-1"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
         "-p", "no:randomly", "--sabot-wave=1", "--sabot-rules=v0.2.1", "-k", SLICE,
         f"--sabot-out={out}"],
        cwd=base, capture_output=True, text=True, timeout=600, check=False,
        env={**os.environ, "SABOT_HISTORY": str(root / "history.sqlite")},
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    own = read_results(out / "readings" / "v0.2.1")
    assert own.session is not None
    return root, own.session.run_id


def test_I98_the_history_records_the_sessions_own_reading(reading: tuple[Path, str]) -> None:
    root, run_id = reading
    history = root / "history.sqlite"
    out, own = resolve_results(history, run_id)
    assert out == (root / "wave-1").resolve()
    assert own == out / "readings" / "v0.2.1" / "results.json"
    loaded = load_run_results(history, run_id)
    assert loaded.note == ""  # its results.json is on disk as recorded
    assert loaded.results.rules == "v0.2.1"
    assert read_results(out).rules == "v0.1.3"  # the directory keeps the registered reading


def test_I98_export_writes_the_readings_report_beside_it_not_over_the_directorys(
    reading: tuple[Path, str], capsys: pytest.CaptureFixture[str],
) -> None:
    root, run_id = reading
    history = str(root / "history.sqlite")
    directory_report = (root / "wave-1" / "report.html").read_bytes()
    assert main(["export", run_id, "--format", "json", "--history", history]) == 0
    assert '"rules": "v0.2.1"' in capsys.readouterr().out
    assert main(["export", run_id, "--format", "html", "--history", history]) == 0
    written = root / "wave-1" / "readings" / "v0.2.1" / "report.html"
    assert str(written) in capsys.readouterr().out
    page = written.read_text("utf-8")
    assert READING in page and CELL in page
    assert (root / "wave-1" / "report.html").read_bytes() == directory_report


def test_I98_the_inspector_shows_the_readings_run_page_and_its_cells(
    reading: tuple[Path, str], tmp_path: Path,
) -> None:
    root, run_id = reading
    with Server(root, project=tmp_path) as server, server.client() as client:
        page = client.get(f"/run/{run_id}")
        assert page.status_code == 200, page.text[:2000]
        assert READING in page.text
        cell = client.get(f"/run/{run_id}/cell/{CELL}.html")
        assert cell.status_code == 200, cell.text[:2000]
        assert CELL in cell.text and "rules v0.2.1" in cell.text
        trace = client.get(f"/run/{run_id}/file/cells/{CELL}/events.jsonl")
        assert trace.status_code == 200 and '"run_start"' in trace.text


def test_I98_indexing_the_directory_later_pairs_the_session_with_its_own_reading(
    reading: tuple[Path, str], tmp_path: Path,
) -> None:
    from pytest_sabot.history import index_output, list_runs

    root, run_id = reading
    later = tmp_path / "later.sqlite"
    index_output(root / "wave-1", later)
    assert [r.run_id for r in list_runs(later)] == [run_id]  # one run, not two readings
    _, own = resolve_results(later, run_id)
    assert own.parent.name == "v0.2.1"
    assert load_run_results(later, run_id).results.rules == "v0.2.1"


def test_I98_an_output_directory_named_readings_is_still_indexed(
    reading: tuple[Path, str], tmp_path: Path,
) -> None:
    """Only inside an output directory are readings/ and slices/ its boards kept apart;
    a user's own --sabot-out=reports/readings is an output directory like any other."""
    import shutil

    from pytest_sabot.history import index_output, list_runs

    root, run_id = reading
    mine = tmp_path / "reports"
    shutil.copytree(root / "wave-1", mine / "readings")
    index_output(mine, tmp_path / "h.sqlite")
    (run,) = list_runs(tmp_path / "h.sqlite")
    assert run.run_id == run_id and Path(run.out_dir) == (mine / "readings").resolve()
