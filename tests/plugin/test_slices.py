"""Issue 9.1 and 10.8: a slice never scores a fault cell without its baseline (standard
section 3, SPEC I41).

pytest deselects ``-k``, ``-m`` and pasted node ids after the plugin's collection hook, so
the plugin reads the final selection. A selected fault cell whose baseline is outside the
selection pulls the baseline in: it runs, or a record of it made earlier in the same output
under the same model, registration hash and rules is reused. A fault cell with no usable
baseline record is never counted, by the plugin nor by the scorer (``sabot rescore``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from plugin_runs import (
    BASELINE,
    SLICE,
    Run,
    accounted_once,
    copy_out,
    no_empty_baselines,
    run,
    shared,
    shared_dir,
)

from pytest_sabot.commands.cli import main
from pytest_sabot.core.manifest import read_manifests
from pytest_sabot.core.models.verdict import BaselineVerdict
from pytest_sabot.harness.run import RunSettings, run_cell
from pytest_sabot.matrix.standard import load_standard
from pytest_sabot.results import build_results, read_results
from pytest_sabot.results.adjudicate import read_record, score_dir, score_recorded, set_aside

# Each test runs whole pytest sessions of real pipelines (seconds each).
pytestmark = pytest.mark.slow

K_SLICE = "langgraph and default and T1 and s11 and (O1 or O3)"
K_CELLS = ["langgraph-default-O1-T1-s11", "langgraph-default-O3-T1-s11"]


@pytest.fixture(scope="module")
def k_slice(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Run:
    where = shared_dir(pytestconfig, tmp_path_factory, "sabot-k-slice")
    return shared(where, "--sabot-wave=1", "-p", "no:xdist", "-k", K_SLICE)


def _assert_baseline_pulled_in(session: Run, cells: list[str]) -> None:
    assert session.returncode == 0, session.describe()
    results = session.results
    assert results.selection.cell_ids == cells
    assert results.selection.pulled_in == [BASELINE]
    bases = [c for c in results.cells if isinstance(c, BaselineVerdict)]
    assert [b.cell_id for b in bases] == [BASELINE]
    accounted_once(results)
    no_empty_baselines(results)
    assert "pulled in by the selection" in session.stdout
    board = session.stdout[session.stdout.index("Sabot scoreboard") :]
    assert " 0/0 " not in board, board
    assert "0 / 0" not in (session.out / "RESULTS.md").read_text()
    assert (session.out / "cells" / BASELINE / "events.jsonl").is_file()


def test_S3_1_a_k_slice_runs_the_baselines_it_deselected(k_slice: Run) -> None:
    _assert_baseline_pulled_in(k_slice, K_CELLS)
    raw = json.loads((k_slice.out / "results.json").read_text())
    fault = [c for c in raw["cells"] if c["kind"] == "fault"]
    assert fault and all(c["baseline_known"] for c in fault)
    (manifest,) = read_manifests(k_slice.out)
    assert manifest.selection.keyword == K_SLICE
    assert manifest.pulled_in_run == [BASELINE]


def test_S3_1_a_marker_slice_under_xdist_runs_its_baselines(tmp_path: Path) -> None:
    session = run(
        tmp_path, "--sabot-wave=1", *SLICE, "-n", "2", "-m", "sabot_cell(operator='O3')"
    )
    _assert_baseline_pulled_in(session, ["langgraph-default-O3-T1-s11"])
    assert "2 workers" in session.stdout


def test_S3_1_a_pasted_cell_id_runs_with_its_baseline(tmp_path: Path) -> None:
    session = run(
        tmp_path, "--sabot-wave=1", "-p", "no:xdist", "::test_cell[langgraph-default-O1-T1-s11]"
    )
    _assert_baseline_pulled_in(session, ["langgraph-default-O1-T1-s11"])


def test_I41_a_baseline_recorded_earlier_in_the_same_output_is_reused(
    k_slice: Run, tmp_path: Path
) -> None:
    out = copy_out(k_slice, tmp_path)
    before = (out / "cells" / BASELINE / "events.jsonl").read_bytes()
    again = run(
        tmp_path, "--sabot-wave=1", "-p", "no:xdist", "-k",
        "langgraph and default and T1 and s11 and O5", out=out,
    )
    _assert_baseline_pulled_in(again, ["langgraph-default-O5-T1-s11"])
    assert (out / "cells" / BASELINE / "events.jsonl").read_bytes() == before
    latest = read_manifests(out)[-1]
    assert latest.pulled_in_reused == [BASELINE] and latest.pulled_in_run == []


def test_I41_a_baseline_recorded_under_another_model_is_never_reused(
    k_slice: Run, tmp_path: Path
) -> None:
    out = copy_out(k_slice, tmp_path)
    again = run(
        tmp_path, "--sabot-wave=1", "-p", "no:xdist", "--sabot-model=sim:credulous",
        "-k", "langgraph and default and T1 and s11 and O1", out=out,
    )
    _assert_baseline_pulled_in(again, ["langgraph-default-O1-T1-s11"])
    latest = read_manifests(out)[-1]
    assert latest.pulled_in_run == [BASELINE]
    assert "another model" in latest.set_aside[BASELINE]
    assert read_record(out, BASELINE).outcome.model == "sim:credulous"  # type: ignore[union-attr]
    aside = sorted((out / "superseded").glob(f"{BASELINE}~*"))
    assert aside and (aside[0] / "events.jsonl").is_file()


def test_S3_1_the_scorer_never_counts_a_fault_cell_whose_baseline_has_no_record(
    k_slice: Run, tmp_path: Path
) -> None:
    out = copy_out(k_slice, tmp_path)
    std = load_standard(1)
    set_aside(out, std.cell(BASELINE), "removed for the test")
    fault = [std.cell(c) for c in K_CELLS]
    assert score_recorded(std, out, fault) == []
    scored = score_dir(std, out, fault)
    assert sorted(scored.unpaired) == K_CELLS
    assert all("has no record" in why for why in scored.unpaired.values())
    results = build_results(std, out, selected_ids=K_CELLS, model="sim:realistic")
    assert results.scoreboard.rows == []  # nothing left to score: no row, no denominator
    assert [u.cell_id for u in results.selection.unpaired] == K_CELLS
    accounted_once(results)
    # sabot rescore of the directory reads the same way: the recorded results no longer
    # hold, and the rebuilt ones count no fault cell
    assert main(["rescore", str(out)]) == 1
    assert read_results(out).scoreboard.rows[0].valid == 2  # the file itself is untouched


def test_S3_1_a_baseline_record_of_another_model_does_not_validate_a_fault_cell(
    tmp_path: Path, gateway_url: str
) -> None:
    std = load_standard(1)
    cell, baseline = std.cell("langgraph-default-O1-T1-s11"), std.cell(BASELINE)
    for each, model in ((baseline, "sim:vigilant"), (cell, "sim:credulous")):
        settings = RunSettings(
            root=std.root, out_dir=tmp_path, gateway_url=gateway_url, model=model
        )
        run_cell(each, std.wave, settings)
    scored = score_dir(std, tmp_path, [baseline, cell])
    assert [v.cell_id for v in scored.verdicts] == [BASELINE]
    assert "another model (sim:vigilant, not sim:credulous)" in scored.unpaired[cell.id]


# --------------------------------------------------------------------------- issue 22.13, 22.7

TINY_WAVE = """wave: 1
title: "Wave 1 cut to one row, two operators, one task"
rules: v0.1.3
flags_protocol: false
contract_revision: "v0.1"
redacted_materials: true
anchors: null
seeds_file: wave1.json
frameworks: [langgraph]
configs: [default]
operators: [O1, O3]
tasks: [T1]
pipeline_model: gpt-5.6-terra
downgrade_model: gpt-5.6-luna
carve_outs: []
"""


def _tiny_root(where: Path, wave: str = TINY_WAVE) -> Path:
    """The shipped standard with wave 1 cut to 15 cells (one row, O1 and O3, T1, five
    seeds and their baselines)."""
    import shutil

    from pytest_sabot.core.paths import standard_root

    shipped = standard_root()
    root = where / "standard"
    for part in ("cells", "tasks", "mappings"):
        shutil.copytree(shipped / part, root / part)
    (root / "cells" / "wave1.yaml").write_text(wave, encoding="utf-8")
    return root


def test_I97_a_slice_in_a_directory_holding_a_whole_wave_keeps_the_waves_board(
    tmp_path: Path,
) -> None:
    root = _tiny_root(tmp_path)
    wave = run(tmp_path, f"--sabot-root={root}", "--sabot-wave=1", "-p", "no:xdist")
    assert wave.returncode == 0, wave.describe()
    whole = read_results(wave.out)
    assert whole.selection.selected == 15 and whole.selection.complete

    one = run(tmp_path, f"--sabot-root={root}", "--sabot-wave=1", "-p", "no:xdist",
              "::test_cell[langgraph-default-O3-T1-s12]", out=wave.out)
    assert one.returncode == 0, one.describe()
    board = read_results(wave.out)
    assert board.selection.cell_ids == whole.selection.cell_ids  # still the whole wave
    assert board.selection.complete and len(board.cells) == len(whole.cells)
    assert board.session is not None and board.session.mode == "resume"
    slices = sorted((wave.out / "slices").iterdir())
    assert len(slices) == 1
    own = read_results(slices[0])
    assert own.selection.cell_ids == ["langgraph-default-O3-T1-s12"]
    assert (slices[0] / "RESULTS.md").is_file()
    assert "langgraph-default-O3-T1-s12" in board.counted
    assert board.counted["langgraph-default-O3-T1-s12"] == own.counted[
        "langgraph-default-O3-T1-s12"]  # the slice's record of the cell is the one counted
    assert "a slice never replaces it" in one.stdout
    assert "15" in (wave.out / "RESULTS.md").read_text()
    # the directory's board is what sabot rescore reproduces from the records
    assert main(["rescore", str(wave.out), "--sabot-root", str(root)]) == 0


def test_I91_a_slices_results_json_reads_no_band_where_a_whole_waves_does(
    k_slice: Run, tmp_path: Path,
) -> None:
    """The band is read on the whole scoreboard only, in results.json as in the reports:
    the slice's file keeps its median and has no band; a whole (one-row) wave has one."""
    sliced = k_slice.results
    assert sliced.partial_reasons and sliced.scoreboard.median_sabot_score is not None
    assert sliced.scoreboard.band is None
    # ... and every report still gives its median, as the partial board's
    assert "median Sabot Score of this partial board across" in k_slice.stdout
    md = (k_slice.out / "RESULTS.md").read_text("utf-8")
    assert "Median Sabot Score of this partial board:" in md
    assert "Median Sabot Score of this partial board" in (k_slice.out / "report.html").read_text(
        "utf-8")
    root = _tiny_root(tmp_path)
    wave = run(tmp_path, f"--sabot-root={root}", "--sabot-wave=1", "-p", "no:xdist",
               "--sabot-seed=11")
    assert wave.returncode == 0, wave.describe()
    sliced_wave = read_results(wave.out)
    assert sliced_wave.partial_reasons and sliced_wave.scoreboard.band is None
    whole = run(tmp_path / "whole", f"--sabot-root={root}", "--sabot-wave=1", "-p",
                "no:xdist")
    assert whole.returncode == 0, whole.describe()
    board = read_results(whole.out)
    assert board.partial_reasons == [] and board.scoreboard.band is not None
    assert "pre-registered band" in whole.stdout  # the whole board's median reads its band


def test_I80_an_exported_slices_junit_has_a_testcase_per_selected_cell_only(
    k_slice: Run, tmp_path: Path,
) -> None:
    """As the session's own XML: the baseline a slice pulled in is named in the suite's
    sabot.pulled_in, and is no testcase of it."""
    import xml.etree.ElementTree as ET

    out = tmp_path / "junit.xml"
    assert main(["export", str(k_slice.out), "--format", "junit", "--out", str(out)]) == 0
    root = ET.parse(out).getroot()
    names = [c.get("name") for c in root.iter("testcase")]
    assert names == [f"test_cell[{cid}]" for cid in K_CELLS]
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["sabot.pulled_in"] == BASELINE


def test_I91_rescore_reads_an_older_partial_boards_band_as_that_file_wrote_it(
    k_slice: Run, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A slice's results.json written before the band was withheld from partial boards is
    reproduced, not flagged: the same median, the band as the file has it."""
    out = copy_out(k_slice, tmp_path)
    data = json.loads((out / "results.json").read_text("utf-8"))
    median = data["scoreboard"]["median_sabot_score"]
    data["scoreboard"]["band"] = "full_push" if median < 0.5 else "guardrails_mostly_work"
    (out / "results.json").write_text(json.dumps(data), "utf-8")
    assert main(["rescore", str(out)]) == 0
    assert "identical to results.json" in capsys.readouterr().out


def test_I97_a_damaged_results_json_is_set_aside_before_a_session_writes_its_board(
    tmp_path: Path,
) -> None:
    """A whole wave's results.json that cannot be read is never replaced unseen: it is set
    aside beside itself, byte for byte, the session says so, and the records stay."""
    root = _tiny_root(tmp_path)
    wave = run(tmp_path, f"--sabot-root={root}", "--sabot-wave=1", "-p", "no:xdist",
               "--sabot-seed=11")
    assert wave.returncode == 0, wave.describe()
    damaged = (wave.out / "results.json").read_bytes()[:2000]
    (wave.out / "results.json").write_bytes(damaged)
    cells = sorted(p.name for p in (wave.out / "cells").iterdir())
    one = run(tmp_path, f"--sabot-root={root}", "--sabot-wave=1", "-p", "no:xdist",
              "::test_cell[langgraph-default-O3-T1-s11]", out=wave.out)
    assert one.returncode == 0, one.describe()
    (aside,) = wave.out.glob("results.damaged-*.json")
    assert aside.read_bytes() == damaged
    assert f"could not be read; it is set aside as {aside.name}" in one.stdout
    assert sorted(p.name for p in (wave.out / "cells").iterdir()) == cells
    read_results(wave.out)  # the session's own board now reads


def test_I98_a_session_under_other_rules_prints_both_readings_and_keeps_the_registered_one(
    tmp_path: Path,
) -> None:
    """Under v0.2.1 the narrow retry-reason rule reads this AutoGen re-plan differently from
    wave 1's registered v0.1.3."""
    session = run(tmp_path, "--sabot-wave=1", "-p", "no:xdist", "--sabot-rules=v0.2.1",
                  "-k", "autogen and guardrail and O1 and T2 and s12")
    assert session.returncode == 0, session.describe()
    directory = read_results(session.out)
    reading = read_results(session.out / "readings" / "v0.2.1")
    assert directory.rules == directory.wave_rules == "v0.1.3"
    assert reading.rules == "v0.2.1"
    assert [c.cell_id for c in directory.cells] == [c.cell_id for c in reading.cells]
    out = session.stdout
    assert "both readings: v0.1.3 (registered) and v0.2.1 (--sabot-rules):" in out, out[-3000:]
    assert "differs" in out
    assert "the directory's results are the registered reading (v0.1.3)" in out
    assert main(["rescore", str(session.out)]) == 0  # identical to the records' reading
    # The reading kept apart scores the directory's records, and reads the same again.
    assert main(["rescore", str(session.out / "readings" / "v0.2.1")]) == 0


# --------------------------------------------------------------------------- I165


def _events_without_clocks(out: Path, cell_id: str) -> list[dict[str, object]]:
    def scrub(value: object) -> object:
        if isinstance(value, dict):
            return {k: scrub(v) for k, v in value.items()
                    if k not in ("t", "session") and not k.endswith("_ms")}
        if isinstance(value, list):
            return [scrub(v) for v in value]
        return value

    lines = (out / "cells" / cell_id / "events.jsonl").read_text().splitlines()
    return [scrub(json.loads(line)) for line in lines]  # type: ignore[misc]


def test_I165_the_rules_never_change_what_a_run_records(
    tmp_path: Path, gateway_url: str
) -> None:
    std = load_standard(1)
    cell = std.cell("autogen-guardrail-O1-T2-s12")
    for rules in ("v0.1.3", "v0.2.1"):
        run_cell(cell, std.wave, RunSettings(root=std.root, out_dir=tmp_path / rules,
                                             gateway_url=gateway_url, rules=rules))
    assert _events_without_clocks(tmp_path / "v0.1.3", cell.id) == _events_without_clocks(
        tmp_path / "v0.2.1", cell.id)


def test_I165_a_baseline_recorded_under_other_rules_pairs_with_its_fault_cell(
    tmp_path: Path, gateway_url: str
) -> None:
    std = load_standard(1)
    cell, baseline = std.cell("langgraph-default-O1-T1-s11"), std.cell(BASELINE)
    for each, rules in ((baseline, "v0.1.3"), (cell, "v0.2.1")):
        run_cell(each, std.wave, RunSettings(root=std.root, out_dir=tmp_path,
                                             gateway_url=gateway_url, rules=rules))
    scored = score_dir(std, tmp_path, [baseline, cell])
    assert scored.unpaired == {}
    assert [v.cell_id for v in scored.verdicts] == [BASELINE, cell.id]


# The one row of wave 1 whose reading v0.2.1's narrow retry-reason rule changes (I98's test).
AUTOGEN_WAVE = (TINY_WAVE.replace("[langgraph]", "[autogen]").replace("[default]", "[guardrail]")
                .replace("[T1]", "[T2]"))
AUTOGEN_BASELINE = "autogen-guardrail-baseline-T2-s12"


def test_I165_a_slice_under_other_rules_beside_a_whole_wave_keeps_the_waves_board_whole(
    tmp_path: Path,
) -> None:
    """USAGE.md's reading of one cell under v0.2.1, run where README's wave already is: the
    pulled-in baseline is the wave's record (read, not run again), the wave's board stays
    whole, and both readings compare the slice's own cells."""
    root = _tiny_root(tmp_path, AUTOGEN_WAVE)
    wave = run(tmp_path, f"--sabot-root={root}", "--sabot-wave=1", "-p", "no:xdist")
    assert wave.returncode == 0, wave.describe()
    before = (wave.out / "cells" / AUTOGEN_BASELINE / "events.jsonl").read_bytes()
    whole = read_results(wave.out)

    one = run(tmp_path, f"--sabot-root={root}", "--sabot-wave=1", "-p", "no:xdist",
              "--sabot-rules=v0.2.1", "-k", "O1 and s12", out=wave.out)
    assert one.returncode == 0, one.describe()
    assert (wave.out / "cells" / AUTOGEN_BASELINE / "events.jsonl").read_bytes() == before
    latest = read_manifests(wave.out)[-1]
    assert latest.pulled_in_reused == [AUTOGEN_BASELINE] and latest.pulled_in_run == []
    board = read_results(wave.out)
    assert board.rules == "v0.1.3" and board.selection.complete
    assert board.selection.unpaired == []
    assert len(board.cells) == len(whole.cells)
    assert board.scoreboard.rows[0].valid == whole.scoreboard.rows[0].valid == 10
    own = read_results(next((wave.out / "slices").iterdir()))
    assert own.rules == "v0.2.1" and own.selection.cell_ids == ["autogen-guardrail-O1-T2-s12"]
    table = one.stdout[one.stdout.index("both readings: v0.1.3 (registered)"):].splitlines()
    # The slice's one fault cell under each reading, never the wave's ten beside it.
    assert table[2].split() == ["autogen-guardrail", "100.0%", "0.0%", "1/1", "differs"], table
    assert main(["rescore", str(wave.out), "--sabot-root", str(root)]) == 0
    own_dir = next((wave.out / "slices").iterdir())
    assert main(["rescore", str(own_dir), "--sabot-root", str(root)]) == 0
