"""Issue 10.11: a run on other models than the standard's pins is flagged off-pin, the way
off-pin framework versions are (standard S8.5, S8.6, S6.2; SPEC I47).

The pipeline model (gpt-5.6-terra), the O4 downgrade target (gpt-5.6-luna) and the judge
(Claude through ``claude -p``) are pinned. results.json's ``off_pin``, the label, the
terminal summary and RESULTS.md name every model that differs. Keyless runs measure no
model: they are labelled fixtures and never called off-pin.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from plugin_runs import Run, shared, shared_dir

from pytest_sabot.matrix.standard import load_standard
from pytest_sabot.report.render import markdown
from pytest_sabot.report.terminal import summary_text
from pytest_sabot.results import build_results

# Each test runs whole pytest sessions of real pipelines (seconds each).
pytestmark = pytest.mark.slow

CELLS = ["langgraph-default-baseline-T1-s11", "langgraph-default-O4-T1-s11"]


@pytest.fixture(scope="module")
def recorded(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Run:
    where = shared_dir(pytestconfig, tmp_path_factory, "sabot-off-pin")
    session = shared(
        where, "--sabot-wave=1", "-p", "no:xdist", "--sabot-framework=langgraph",
        "--sabot-config=default", "--sabot-task=T1", "--sabot-seed=11",
        "--sabot-operator=baseline,O4",
    )
    assert session.returncode == 0, session.describe()
    return session


def _results(out: Path, model: str, downgrade: str | None, judge: str) -> object:
    return build_results(
        load_standard(1), out, selected_ids=CELLS, model=model, downgrade_model=downgrade,
        judge_spec=judge,
    )


def test_10_11_models_off_the_pins_are_flagged_in_results_label_summary_and_report(
    recorded: Run,
) -> None:
    results = _results(recorded.out, "openai:gpt-4.1", "openai:gpt-4.1-mini", "openai:gpt-4o")
    off = results.off_pin  # type: ignore[attr-defined]
    assert off["pipeline model"] == "openai:gpt-4.1, pinned gpt-5.6-terra"
    assert off["O4 downgrade model"] == "openai:gpt-4.1-mini, pinned gpt-5.6-luna"
    assert off["judge"].startswith("openai:gpt-4o, the standard's judge is Claude")
    assert "OFF-PIN: openai:gpt-4.1, pinned gpt-5.6-terra" in results.label  # type: ignore[attr-defined]
    summary = "\n".join(summary_text(results, 240))  # type: ignore[arg-type]
    assert "OFF-PIN: " in summary and "pipeline model openai:gpt-4.1" in summary
    assert "O4 downgrade model openai:gpt-4.1-mini" in summary
    report = markdown(results)  # type: ignore[arg-type]
    assert report.splitlines()[2].startswith("> live model openai:gpt-4.1 (OFF-PIN")
    assert "> OFF-PIN: " in report


def test_10_11_the_pinned_models_are_not_flagged(recorded: Run) -> None:
    results = _results(recorded.out, "openai:gpt-5.6-terra", None, "claude-cli")
    assert not {"pipeline model", "O4 downgrade model", "judge"} & set(results.off_pin)  # type: ignore[attr-defined]
    dated = _results(recorded.out, "openai:gpt-5.6-terra-2026-07-01", "gpt-5.6-luna",
                     "claude-cli:opus")
    assert not {"pipeline model", "O4 downgrade model", "judge"} & set(dated.off_pin)  # type: ignore[attr-defined]


def test_10_11_a_judge_off_the_pin_or_absent_is_flagged_for_a_live_run(recorded: Run) -> None:
    for judge in ("sim", "none"):
        results = _results(recorded.out, "openai:gpt-5.6-terra", None, judge)
        assert results.off_pin["judge"].startswith(judge)  # type: ignore[attr-defined]


def test_10_11_keyless_runs_are_fixtures_never_off_pin(recorded: Run) -> None:
    results = recorded.results
    assert results.fixture and "fixtures of the embedded model" in results.label
    assert not {"pipeline model", "O4 downgrade model", "judge"} & set(results.off_pin)


def test_10_11_a_replay_is_judged_by_the_models_its_calls_were_served_by(
    recorded: Run,
) -> None:
    # these records were served by the embedded model: replayed as a live run, they are
    # not measurements of the pinned model, and the results say so
    results = _results(recorded.out, "replay:/recordings", None, "claude-cli")
    off = results.off_pin  # type: ignore[attr-defined]
    assert off["pipeline model"] == "replayed calls served by sim:realistic, pinned gpt-5.6-terra"
    assert off["O4 downgrade model"].startswith("replayed calls served by sim:realistic-weak")
