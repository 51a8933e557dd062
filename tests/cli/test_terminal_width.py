"""Issue 22 item 15 (SPEC I79): the summary a wave prints, and the scoreboard of
``sabot report`` and ``sabot rescore``, fit an 80-column terminal: the tables are fitted by
rich (columns left out by priority and named), the prose wraps at the width."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SLICE = "langgraph and guardrail and T1 and s11"
WIDTH = 80

pytestmark = pytest.mark.slow


def _env(columns: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "SABOT_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    env["COLUMNS"] = str(columns)
    return env


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    where = tmp_path_factory.mktemp("width")
    out = where / "out"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly",
         "--sabot-wave=1", f"--sabot-out={out}", "-k", SLICE],
        cwd=where, env=_env(WIDTH), capture_output=True, text=True, timeout=600, check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    return out, done.stdout


def _sabot_section(stdout: str) -> list[str]:
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if " Sabot " in line and "=" in line)
    end = next(i for i, line in enumerate(lines) if line.startswith("results:"))
    return lines[start:end]


def _where(stdout: str) -> list[str]:
    """The lines that say where the results are: one, or one path a line."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("results:"))
    if lines[start] != "results:":
        return lines[start:start + 1]
    end = next(i for i in range(start + 1, len(lines)) if not lines[i].startswith("  /"))
    return lines[start:end]


def test_issue22_15_the_sabot_summary_of_a_wave_fits_80_columns(session: tuple[Path, str]) -> None:
    _out, stdout = session
    section = _sabot_section(stdout)
    assert any(line.startswith("langgraph-guardrail") for line in section), section
    too_wide = [line for line in section if len(line) > WIDTH]
    assert not too_wide, too_wide
    assert any("narrow terminal:" in line for line in section)  # what was left out is said


def test_issue22_15_the_paths_of_the_results_fit_80_columns_one_a_line(
    session: tuple[Path, str],
) -> None:
    _out, stdout = session
    where = _where(stdout)
    named = " ".join(where)
    for name in ("results.json", "RESULTS.md"):
        assert name in named, where
    paths = [line.strip() for line in where[1:]] if where[0] == "results:" else []
    if paths:  # one path a line only where the one line would not fit
        assert len("results: " + ", ".join(paths)) > WIDTH, where
    else:
        assert len(where[0]) <= WIDTH, where
    too_wide = [line for line in where if len(line) > WIDTH and " " in line.strip()]
    assert not too_wide, too_wide


@pytest.mark.parametrize("command", [["report"], ["rescore"]])
def test_issue22_15_sabot_report_and_rescore_fit_80_columns(
    session: tuple[Path, str], command: list[str]
) -> None:
    out, _stdout = session
    done = subprocess.run([sys.executable, "-m", "pytest_sabot", *command, str(out)],
                          env=_env(WIDTH), capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith("langgraph-")]
    assert rows, done.stdout
    too_wide = [line for line in done.stdout.splitlines()
                if len(line) > WIDTH and not line.startswith("report: ")]
    assert not too_wide, too_wide


def test_issue22_15_a_wide_terminal_shows_every_column(session: tuple[Path, str]) -> None:
    out, _stdout = session
    done = subprocess.run([sys.executable, "-m", "pytest_sabot", "report", str(out)],
                          env=_env(160), capture_output=True, text=True, timeout=300,
                          check=False)
    header = next(line for line in done.stdout.splitlines() if line.startswith("row "))
    for column in ("react", "recov", "RwD"):
        assert column in header, header


@pytest.mark.parametrize("width", [40, 60, 80])
def test_I79_a_kept_column_is_never_lost_off_the_edge_the_longest_text_is_cut(
    width: int,
) -> None:
    """Every column the fitting keeps is printed: when the values are too long the widest
    are cut with an ellipsis, never a column (the demo's 'ok' once vanished at 80)."""
    from rich.console import Console

    from pytest_sabot.report.terminal import Column, print_table

    rows = [("langgraph-guardrail-O4-T1-s11", "sim:credulous", True,
             "DETECTED_HARD REACTED via reject-retry (reviewer) at seq 33")]
    columns = (Column("cell", lambda r: r[0], 1), Column("persona", lambda r: r[1], 1),
               Column("ok", lambda r: "yes" if r[2] else "NO", 1),
               Column("observed", lambda r: r[3], 1))
    out = Console(width=width, record=True)
    print_table(out, columns, rows)
    lines = out.export_text().splitlines()
    assert all(len(line) <= width for line in lines)
    assert lines[0].split() == ["cell", "persona", "ok", "observed"]
    assert " yes " in lines[1] and lines[1].rstrip().endswith("…")
