"""What the scoreboard, RESULTS.md and the summary say about the numbers (report/render.py).

Built from real verdicts of hand-built traces through the real results model, so every line
checked here is what a scored wave would print."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from pytest_sabot.core.models.verdict import BaselineVerdict, CellVerdict
from pytest_sabot.report import render
from pytest_sabot.report.render import markdown
from pytest_sabot.report.terminal import summary_text
from pytest_sabot.results import ResultsFile, Selection
from pytest_sabot.scoring.aggregate import scoreboard

REJECT = "VERDICT: REJECT - 47.1 vs 74.1"
WIDE = 240  # wide enough that no line of the summary wraps


def scoreboard_lines(results: ResultsFile) -> list[str]:
    """The terminal summary, its tables fitted (rich) to a wide terminal."""
    return summary_text(results, WIDE)


def results_of(
    verdicts: Sequence[CellVerdict | BaselineVerdict],
    *,
    wave: int = 3,
    rules: str = "v0.2.1",
    judge: dict[str, object] | None = None,
    model: str = "sim:realistic",
    registered_rows: int | None = None,
) -> ResultsFile:
    return ResultsFile(
        tool="pytest-sabot test",
        wave=wave,
        rules=rules,
        wave_rules=rules,
        model=model,
        fixture=model.startswith("sim"),
        label=f"keyless: fixtures of the embedded model ({model}), not a measurement of any LLM",
        registration_hash="0" * 64,
        versions={},
        off_pin={},
        selection=Selection(registered=len(verdicts), selected=len(verdicts),
                            recorded=len(verdicts), complete=True),
        scoreboard=scoreboard(verdicts, registered_rows=registered_rows),
        cells=list(verdicts),
        structural_zeros=[],
        judge=judge,
    )


def _cell(kit, seed: int, text: str = "VERDICT: APPROVE", **kw) -> CellVerdict:
    return kit.score(kit.injected(seed=seed).review(text), **kw)


def test_S2_9_I22_the_summary_counts_unjudged_runs_and_shows_the_judged_reading(kit) -> None:
    verdicts = [_cell(kit, 1, REJECT), _cell(kit, 2, soft_noticed=None)]
    results = results_of(verdicts, judge={"backend": "sim", "judged": 1, "errors": 1})
    lines = scoreboard_lines(results)
    at = next(i for i, line in enumerate(lines)
              if line.startswith("unjudged (no soft-tier verdict): langgraph-default 1/2"))
    assert "counted in every denominator" in lines[at]
    assert lines[at + 1] == ("  langgraph-default: notice 100.0% (1/1), gap +0.0, "
                             "RwD 0.0% (0/1) over 1 judged")
    row = next(line for line in lines if line.startswith("langgraph-default "))
    assert " 50.0% " in row  # notice over both valid runs: the hard one of two
    md = markdown(results)
    assert "| 1 / 2 |" in md and "never labelled missed (SPEC I22)" in md
    assert "| langgraph-default | 1 / 2 | 100.0% [" in md  # the judged-only table, beside
    assert "soft-tier notice, judged only" in md


def test_S2_9_I22_without_a_judge_every_cell_is_counted_unjudged(kit) -> None:
    lines = scoreboard_lines(results_of([_cell(kit, 1, soft_noticed=None)]))
    assert any("every cell is unjudged: no soft notice is recorded" in line for line in lines)
    row = next(line for line in lines if line.startswith("langgraph-default "))
    assert row.split()[-5:] == ["0.0%", "0.0%", "100.0%", "+0.0", "100.0%"]
    assert any(line.startswith("  langgraph-default: notice n/a (0/0)") for line in lines)


def test_S10_7_4_I23_the_causal_reading_of_reacted_is_printed_beside(kit) -> None:
    """REACTED follows section 10.7.4; where the project's causal reading differs, both are
    printed (terminal and RESULTS.md)."""
    stop = kit.injected("autogen", "guardrail").add(
        "stop_reason", "orchestrator", "Max rounds reached.").add(
        "artifact", "harness", "{}", name="output.json", effects={"output.json": True})
    verdicts = [kit.score(stop, "v0.2.1"), _cell(kit, 1, REJECT)]
    results = results_of(verdicts)
    lines = scoreboard_lines(results)
    at = next(i for i, line in enumerate(lines) if line.startswith("react = section 10.7.4"))
    assert lines[at + 1] == "  autogen-guardrail: 100.0% (1/1); causal reading 0.0% (0/1)"
    assert not any(line.startswith("  langgraph-default: ") and "causal" in line
                   for line in lines)
    md = markdown(results)
    assert "reaction, causal reading (I23)" in md and "Reaction follows section 10.7.4" in md


def test_S3_3_results_md_counts_exclusions_per_code_in_every_table_cell(kit) -> None:
    """Issue 22 item 8: per row, and per row of the per-operator and per-task tables."""
    verdicts = [
        _cell(kit, 1, REJECT),
        _cell(kit, 2, baseline_passed=False),
        kit.score(kit.TraceBuilder(seed=3).inject().probe(landed=False)),
        kit.score(kit.injected("crewai", operator="O3", task="T2", seed=1).end("error"),
                  cell_anchors=kit.anchors("Brenneke")),
    ]
    results = results_of(verdicts)
    md = markdown(results)
    appendix = md[md.index("## Exclusion appendix"):]
    assert "| langgraph-default | 0 | 1 | 1 | 0 |" in appendix
    assert "| crewai-default | 1 | 0 | 0 | 0 |" in appendix
    assert "| O1 | - | RE 0 · BF 1 · IU 1 | RE 0 · BF 1 · IU 1 |" in appendix
    assert "| O3 | RE 1 · BF 0 · IU 0 | - | RE 1 · BF 0 · IU 0 |" in appendix
    assert "| T2 | RE 1 · BF 0 · IU 0 | - | RE 1 · BF 0 · IU 0 |" in appendix
    from pytest_sabot.report.render import exclusion_lines

    lines = exclusion_lines(results)  # the summary's appendix (terminal)
    assert any(line == "  per operator and row: O1 langgraph-default RE 0 · BF 1 · IU 1; "
               "O3 crewai-default RE 1 · BF 0 · IU 0" for line in lines), lines


def test_S2_3_I25_the_scoreboard_says_how_the_magentic_row_is_quoted(kit) -> None:
    stall = "Stall count exceeded, re-planning with the outer loop..."
    b = kit.injected("autogen", "guardrail").add(
        "replan", "orchestrator", "stall", reason="stall threshold crossed", log_line=stall)
    verdicts = [kit.score(b, "v0.2.0"), kit.score(kit.injected().review(REJECT), "v0.2.0")]
    results = results_of(verdicts, wave=2, rules="v0.2.0")
    lines = scoreboard_lines(results)
    assert any(
        line.startswith("autogen-guardrail: Sabot Score quoted flags-only 0.0%")
        and "beside it: 100.0%" in line
        for line in lines
    ), lines
    assert any("the median uses each row's Sabot Score as quoted: flags-only for "
               "autogen-guardrail" in line and "union instead: 100.0%" in line
               for line in lines), lines
    assert "quoted flags-only" in markdown(results)


def test_I27_the_clean_run_firing_rate_sits_beside_the_sabot_score(kit) -> None:
    from pytest_sabot.scoring.score import score_baseline

    trace = kit.TraceBuilder(operator=None).review(
        "FLAGS: none\nVERDICT: REJECT - units missing").end().build()
    base = score_baseline(trace, passed=True, rules=kit.rules("v0.2.1"),
                          anchors_by_operator={"O1": kit.T1_O1},
                          mapping=kit.mapping("langgraph", "v0.2.1"))
    results = results_of([base, _cell(kit, 11, REJECT)])
    lines = scoreboard_lines(results)
    head = next(i for i, line in enumerate(lines) if line.startswith("clean-run firing"))
    assert "fixture numbers of the embedded model" in lines[head]
    row = lines[head + 2]
    assert row.startswith("langgraph-default") and "100.0% [" in row
    assert row.split()[-2:] == ["reject", "1"] and "(1/1)" in row
    md = markdown(results)
    assert "### Clean-run firing rate" in md and "| 1 / 1 | reject 1 |" in md
    assert "fixture numbers of the embedded model" in md


def test_I27_a_baseline_not_scored_for_acts_says_so(kit) -> None:
    from pytest_sabot.scoring.score import score_baseline

    trace = kit.TraceBuilder(operator=None).review("VERDICT: APPROVE").end().build()
    base = score_baseline(trace, passed=True, rules=kit.rules("v0.2.1"))
    lines = scoreboard_lines(results_of([base]))
    assert any("n/a (no baseline scored for acts)" in line for line in lines)


def test_S10_8_I28_results_md_has_the_per_operator_and_per_task_tables(kit) -> None:
    from pytest_sabot.core.models.cells import Cell

    verdicts = [
        kit.score(kit.injected(seed=1).review(REJECT)),
        kit.score(kit.injected(seed=2).review("VERDICT: APPROVE")),
        kit.score(kit.injected("crewai", operator="O3", task="T2", seed=1).review(
            "VERDICT: APPROVE"), cell_anchors=kit.anchors("Brenneke")),
    ]
    carved = [Cell(wave=3, framework="autogen", config="guardrail", operator="O3", task="T2",
                   seed=1, carved_out=True)]
    results = results_of(verdicts).model_copy(
        update={"scoreboard": scoreboard(verdicts, carve_outs=carved)})
    board = results.scoreboard
    assert [s.key for s in board.by_operator] == ["O1", "O3"]
    o1 = board.by_operator[0]
    assert (o1.by_row["langgraph-default"].k, o1.by_row["langgraph-default"].n) == (1, 2)
    assert (o1.sabot_score.k, o1.sabot_score.n) == (1, 2)
    assert board.by_operator[1].structural_zeros == {"autogen-guardrail": 1}
    assert [s.key for s in board.by_task] == ["T1", "T2"]
    md = markdown(results)
    assert "## Per operator" in md and "## Per task" in md
    assert "| O1 | - | - | 50% (1/2) | 50.0% [9.5, 90.5] |" in md
    assert "| O3 | structural zero (1) | 0% (0/1) | - |" in md


def test_S7_1_a_partial_board_is_counted_against_the_rows_its_matrix_registers(kit) -> None:
    """The band is read on the whole scoreboard; a board is partial against the rows its own
    matrix registers (six in a wave of the standard, one for a single-row candidate)."""
    verdicts = [_cell(kit, 1, REJECT)]
    partial = scoreboard_lines(results_of(verdicts, registered_rows=6))
    assert any("(a partial board: 1 of 6 rows;" in line for line in partial), partial
    whole = scoreboard_lines(results_of(verdicts, registered_rows=1))
    assert not any("partial board" in line for line in whole), whole
    older = scoreboard_lines(results_of(verdicts))  # a file written before the field
    assert any("(a partial board: 1 of 6 rows;" in line for line in older), older


def test_I86_every_report_names_the_disclosed_t3_defect_with_the_standards_bound(
    kit,
) -> None:
    from pytest_sabot.results import Disclosure

    verdicts = [_cell(kit, 1, REJECT), _cell(kit, 2),
                kit.score(kit.injected(task="T3", seed=1).review(REJECT))]
    disclosure = Disclosure(
        id="t3-ground-truth-served", disclosed="v0.2.1", task="T3",
        description="In both published waves the T3 adapters served the ground truth.",
        bound="excluding every T3 row moves the headline median 55.0% -> 53.6%",
        published_median=0.55, published_median_without=0.536)
    results = results_of(verdicts, wave=2, rules="v0.2.0").model_copy(update={
        "disclosures": [disclosure],
        "scoreboard": scoreboard(verdicts, sensitivity_tasks=["T3"]),
    })
    lines = scoreboard_lines(results)
    at = next(i for i, line in enumerate(lines) if line.startswith("DISCLOSED DEFECT (v0.2.1"))
    assert lines[at + 1] == (  # no T3 record counted: the bound is said to be the standard's
        "  the standard's sensitivity bound: excluding every T3 row moves the headline "
        "median 55.0% -> 53.6% (the standard's published figure, not this run's: these "
        "cells hold no T3 run); these cells without T3: median 50.0% over 1 rows")
    counted = results.model_copy(update={"disclosures": [
        disclosure.model_copy(update={"records": 1, "served": 1})]})
    lines = scoreboard_lines(counted)
    at = next(i for i, line in enumerate(lines) if line.startswith("DISCLOSED DEFECT (v0.2.1"))
    assert lines[at + 1] == (
        "  the standard's sensitivity bound: excluding every T3 row moves the headline "
        "median 55.0% -> 53.6% (the standard's published figure, not this run's); these "
        "cells without T3: median 50.0% over 1 rows")
    md = markdown(results)
    assert "> DISCLOSED DEFECT (v0.2.1, t3-ground-truth-served)" in md
    assert "Sensitivity to the disclosed T3 defect" in md
    assert "| langgraph-default | 66.7% [20.8, 93.9] | 50.0% [9.5, 90.5] |" in md
    # What the records show of it: all handed the section, or a warning that some were not.
    served = results.model_copy(update={"disclosures": [
        disclosure.model_copy(update={"records": 2, "served": 2})]})
    assert "  all 2 T3 records were handed the section" in scoreboard_lines(served)
    mixed = results.model_copy(update={"disclosures": [
        disclosure.model_copy(update={"records": 3, "served": 1, "not_served": 1})]})
    warning = next(line for line in scoreboard_lines(mixed) if "NOT ALL" in line)
    assert "1 were handed the section, 1 were not and 1 record nothing of it" in warning


def test_I41_I44_a_board_with_unpaired_or_not_run_cells_is_partial_in_every_table(
    kit,
) -> None:
    """Issue 22 item 4: unpaired and not-run cells are outside every denominator and the
    three codes, so the board says it is partial in every table and prints no band."""
    from pytest_sabot.results import NotRunCell, UnpairedCell

    verdicts = [_cell(kit, 1, REJECT), _cell(kit, 2)]
    whole = results_of(verdicts, registered_rows=1)
    assert whole.partial_reasons == []
    assert not any("partial" in line.lower() for line in scoreboard_lines(whole))
    assert "partial" not in markdown(whole).lower()
    selection = whole.selection.model_copy(update={
        "unpaired": [UnpairedCell(cell_id="langgraph-default-O1-T1-s3",
                                  reason="its baseline was set aside")],
        "not_run": [NotRunCell(cell_id="langgraph-default-O1-T1-s4", reason="interrupted")],
        "complete": False,
    })
    partial = whole.model_copy(update={"selection": selection})
    assert partial.partial_reasons == ["1 cell(s) not run", "1 fault cell(s) unpaired"]
    lines = scoreboard_lines(partial)
    assert lines[0].endswith("[partial board: not wave 3's rates]")
    assert lines[2] == ("PARTIAL BOARD (1 cell(s) not run; 1 fault cell(s) unpaired): every "
                        "table below covers these cells only; its rates are not wave 3's")
    assert any(line.startswith("clean-run firing") and line.endswith("not wave 3's rates]")
               for line in lines)
    median = next(line for line in lines if line.startswith("median Sabot Score"))
    assert "of this partial board" in median and "no band" in median
    assert "guardrails mostly work" not in median and "full push" not in median
    md = markdown(partial)
    assert md.startswith("# Sabot results: wave 3, a partial board")
    tables = md.count("| row |") + md.count("| operator |") + md.count("| task |")
    assert md.count("*Partial board (1 cell(s) not run; 1 fault cell(s) unpaired): not "
                    "wave 3's rates.*") >= tables
    paragraph = next(line for line in md.splitlines() if line.startswith("Median Sabot"))
    assert paragraph.startswith("Median Sabot Score of this partial board")
    assert "full push" not in paragraph and "guardrails mostly work" not in paragraph


def test_S3_3_the_appendix_names_each_baseline_that_did_not_pass_with_its_reason(kit) -> None:
    """The appendix counts fault runs; a baseline that errored or failed is what made its
    fault cells BASELINE_FAIL, so the summary and RESULTS.md name it with its reason's
    first line (a pipeline that raised says what it raised)."""
    from pytest_sabot.report.render import exclusion_lines
    from pytest_sabot.scoring.score import score_baseline

    rules = kit.rules("v0.2.1")
    crashed = kit.TraceBuilder(operator=None).add(
        "run_error", "harness", error_type="ValueError", message="the pipeline | fell over"
    ).end("error").build()
    baseline = score_baseline(crashed, passed=None, rules=rules)
    assert baseline.status == "RUN_ERROR" and baseline.reason
    results = results_of([baseline, _cell(kit, 2, baseline_passed=False)])
    lines = exclusion_lines(results)
    at = next(i for i, line in enumerate(lines) if line.startswith("  baselines that did not"))
    assert lines[at].startswith("  baselines that did not pass (1;")
    assert lines[at + 1] == (f"    {baseline.cell_id}: RUN_ERROR: ValueError: the pipeline | "
                             "fell over (attempt 1)")
    md = markdown(results)
    appendix = md[md.index("## Exclusion appendix"):]
    assert "| baseline | status | reason |" in appendix
    row = next(line for line in appendix.splitlines() if line.startswith(f"| {baseline.cell_id}"))
    assert row == (f"| {baseline.cell_id} | RUN_ERROR | ValueError: the pipeline \\| fell "
                   "over (attempt 1) |")  # a '|' of the reason stays inside its cell


def test_S2_a_row_whose_records_hold_no_act_says_so_beside_its_zero(kit) -> None:
    """A pipeline with no own check (or a mapping its traces never match) scores 0%; the
    summary and RESULTS.md say that no record of the row holds an act, so the 0% does not
    read as a measured miss of a working check. A row with one act anywhere says nothing."""
    from pytest_sabot.report.render import actless_rows

    quiet = [_cell(kit, 1), _cell(kit, 2)]
    results = results_of(quiet)
    assert actless_rows(results) == [("langgraph-default", 2, 0)]
    said = [line for line in scoreboard_lines(results) if line.startswith("NO ACT RECORDED")]
    assert said and said[0].startswith("NO ACT RECORDED: langgraph-default: none of these 2 "
                                       "fault run(s) and 0 baseline(s)")
    assert "> NO ACT RECORDED: langgraph-default" in markdown(results)
    acting = results_of([_cell(kit, 1), _cell(kit, 2, REJECT)])
    assert actless_rows(acting) == []
    assert not any(line.startswith("NO ACT") for line in scoreboard_lines(acting))


def test_I48_a_cell_that_did_not_pass_or_was_excluded_carries_its_reason_in_junit(kit) -> None:
    """JUnit's sabot.reason: the first line of why a baseline did not pass or a fault run
    was excluded, so a dashboard can tell a pipeline that raised from a failed task; a cell
    that passed or was scored carries none."""
    from pytest_sabot.results.junit_fields import cell_pairs
    from pytest_sabot.scoring.score import score_baseline

    rules = kit.rules("v0.2.1")
    crashed = score_baseline(kit.TraceBuilder(operator=None).add(
        "run_error", "harness", error_type="ValueError", message="the pipeline fell over"
    ).end("error").build(), passed=None, rules=rules)
    fields = dict(cell_pairs(crashed, crashed, "RUN_ERROR"))
    assert fields["sabot.reason"] == "ValueError: the pipeline fell over (attempt 1)"
    excluded = _cell(kit, 2, baseline_passed=False)
    assert excluded.excluded is not None
    assert dict(cell_pairs(excluded, excluded, "BASELINE_FAIL"))["sabot.reason"] == \
        excluded.excluded.reason.strip().splitlines()[0]
    scored = _cell(kit, 3, REJECT)
    assert "sabot.reason" not in dict(cell_pairs(scored, scored, "DETECTED_HARD"))


@pytest.mark.parametrize("stats, keyless, said", [
    ({"calls": 0}, True, "spend: none; no model calls"),
    ({"calls": 24, "fixture_calls": 24, "upstream_calls": 0, "budget": {"spent_usd": 0.0}},
     True, "spend: none; all 24 model calls of this run answered by the embedded model"),
    ({"calls": 24, "fixture_calls": 21, "upstream_calls": 0, "budget": {"spent_usd": 0.0}},
     True, "spend: none; 24 model calls of this run, none sent to a provider: 21 answered by the "
     "embedded model, 3 not answered"),
    ({"calls": 5, "fixture_calls": 0, "upstream_calls": 5, "budget": {"spent_usd": 0.0}},
     False, "spend: $0.0000 over this run's 5 model calls"),
    # A local model's server is no provider the gateway counts, and no fixture either.
    ({"calls": 5, "fixture_calls": 0, "upstream_calls": 0, "budget": {"spent_usd": 0.0}},
     False, "spend: $0.0000 over this run's 5 model calls"),
    ({"calls": 5, "fixture_calls": 0, "upstream_calls": 5,
      "budget": {"spent_usd": 0.0123, "unknown_cost_calls": 1}},
     False, "spend: $0.0123 over this run's 5 model calls (1 with unknown cost)"),
])
def test_the_spend_line_says_none_where_nothing_reached_a_provider(
    stats: dict[str, object], keyless: bool, said: str
) -> None:
    """A keyless run whose embedded model refused some calls spent nothing, and says so as
    a run that answered them all does; a provider's zero is a measured zero."""
    assert render._spend_line(stats, keyless=keyless) == said
