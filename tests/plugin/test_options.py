"""Issue 9.4: bad input is refused before the first cell, with clear words.

Every refusal is a pytest usage error (exit 4) that names the option or file, the field and
what was expected; none is an INTERNALERROR or a traceback, and nothing is written.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from pytest_sabot.core.paths import standard_root


def _refused(pytester: pytest.Pytester, *args: str) -> str:
    result = pytester.runpytest("--sabot-wave=1", "-p", "no:cacheprovider", *args)
    text = "\n".join(result.outlines + result.errlines)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, text
    assert "INTERNALERROR" not in text and "Traceback" not in text, text
    assert not (pytester.path / "reports").exists(), "a refused session wrote records"
    return text


@pytest.mark.parametrize(
    ("option", "words"),
    [
        ("--sabot-fail-under=abc", ["--sabot-fail-under", "fraction from 0 to 1", "'abc'"]),
        ("--sabot-fail-under=60", ["--sabot-fail-under", "not a percent", "write 0.6"]),
        ("--sabot-fail-under=-0.1", ["--sabot-fail-under", "fraction from 0 to 1"]),
        ("--sabot-max-run-errors=lots", ["--sabot-max-run-errors", "fraction"]),
        ("--sabot-timeout=soon", ["--sabot-timeout", "number of seconds", "'soon'"]),
        ("--sabot-max-connections=x", ["--sabot-max-connections", "whole number", "'x'"]),
        ("--sabot-max-connections=0", ["--sabot-max-connections", "1 or more"]),
        ("--sabot-budget-usd=-5", ["--sabot-budget-usd", "above 0", "'-5'"]),
    ],
)
def test_9_4_numeric_options_are_typed_usage_errors(
    pytester: pytest.Pytester, option: str, words: list[str]
) -> None:
    text = _refused(pytester, option)
    for word in words:
        assert word in text, (word, text)


def test_9_4_an_ini_value_of_the_wrong_type_names_the_ini_key(pytester: pytest.Pytester) -> None:
    text = _refused(pytester, "-o", "sabot_fail_under=half")
    assert "ini key sabot_fail_under" in text and "'half'" in text


def test_9_4_an_environment_value_of_the_wrong_type_names_the_variable(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SABOT_WAVE", raising=False)
    monkeypatch.setenv("SABOT_MODEL", "sim:paranoid")
    text = _refused(pytester)
    assert "--sabot-model=sim:paranoid" in text and "persona" in text


@pytest.mark.parametrize(
    ("model", "words"),
    [
        ("sim:paranoid", ["--sabot-model=sim:paranoid", "unknown embedded-model persona",
                          "vigilant", "credulous", "realistic"]),
        ("foo:bar", ["--sabot-model=foo:bar", "unknown backend 'foo'", "replay:<dir>"]),
        ("gpt-5.6-terra", ["--sabot-model=gpt-5.6-terra", "'openai:<model>'"]),
        ("replay:/nowhere/recordings", ["does not exist", "/nowhere/recordings"]),
    ],
)
def test_9_4_the_model_spec_is_checked_before_any_cell(
    pytester: pytest.Pytester, model: str, words: list[str]
) -> None:
    text = _refused(pytester, f"--sabot-model={model}")
    for word in words:
        assert word in text, (word, text)


@pytest.mark.slow
def test_9_4_a_live_model_without_a_price_is_refused_before_any_money_is_spent(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    text = _refused(pytester, "--sabot-model=openai:my-local-model")
    assert "no price for model 'my-local-model'" in text and "--sabot-prices" in text
    prices = tmp_path / "prices.yaml"
    prices.write_text(
        yaml.safe_dump(
            {"models": {"my-local-model": {"input": 0.1, "cached_input": 0.0, "output": 0.2}}}
        )
    )
    # priced, but the O4 cells of the wave need the downgrade model priced too
    text = _refused(pytester, "--sabot-model=openai:my-local-model", f"--sabot-prices={prices}")
    assert "--sabot-downgrade-model" in text and "gpt-5.6-luna" in text


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["missing", "not yaml"])
def test_9_4_a_bad_price_table_is_refused_before_any_cell_even_keyless(
    pytester: pytest.Pytester, kind: str
) -> None:
    prices = pytester.path / "prices.yaml"
    if kind == "not yaml":
        prices.write_text("models: [unclosed\n")
    text = _refused(pytester, f"--sabot-prices={prices}")
    assert "--sabot-prices" in text and str(prices) in text and "nothing was run" in text


def test_9_4_a_spend_ledger_that_is_a_file_is_refused_before_any_cell(
    pytester: pytest.Pytester,
) -> None:
    blocker = pytester.path / "a-file"
    blocker.write_text("x")
    text = _refused(pytester, f"--sabot-spend-ledger={blocker}")
    assert "--sabot-spend-ledger" in text and "expected a directory" in text


@pytest.mark.parametrize("kind", ["a directory", "under a file"])
def test_9_4_a_run_history_that_cannot_be_a_file_is_refused_before_any_cell(
    pytester: pytest.Pytester, kind: str
) -> None:
    blocker = pytester.path / "blocker"
    if kind == "a directory":
        blocker.mkdir()
        history = blocker
    else:
        blocker.write_text("x")
        history = blocker / "history.sqlite"
    text = _refused(pytester, f"--sabot-history={history}")
    assert "--sabot-history" in text and "expected a history file" in text


def test_9_4_an_unknown_rule_version_names_the_option(pytester: pytest.Pytester) -> None:
    text = _refused(pytester, "--sabot-rules=v9.9")
    assert "--sabot-rules=v9.9: unknown rule version 'v9.9'; known: v0.1" in text, text


def test_9_4_an_unwritable_output_is_refused_before_any_cell(pytester: pytest.Pytester) -> None:
    blocker = pytester.path / "not-a-dir"
    blocker.write_text("a file where the output directory should be")
    text = _refused(pytester, f"--sabot-out={blocker}", *_ONE_CELL)
    assert f"--sabot-out={blocker}" in text and "is a file" in text
    text = _refused(pytester, f"--sabot-out={blocker}/wave-1", *_ONE_CELL)
    assert "is not a directory" in text


_ONE_CELL = [
    "--sabot-framework=langgraph",
    "--sabot-config=default",
    "--sabot-task=T1",
    "--sabot-seed=11",
    "--sabot-operator=baseline",
]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("option", "registered"),
    [
        ("--sabot-seed=99", "registered: 11, 12, 13, 14, 15"),
        ("--sabot-task=T9", "registered: T1, T2, T3, T4, T5"),
        ("--sabot-operator=O7", "registered: O1, O2, O3, O4, O5, O6, baseline"),
        ("--sabot-framework=haystack", "registered: autogen, crewai, langgraph"),
    ],
)
def test_9_4_a_filter_that_matches_nothing_names_the_registered_values(
    pytester: pytest.Pytester, option: str, registered: str
) -> None:
    text = _refused(pytester, option)
    assert option in text and "not registered in wave 1" in text and registered in text


def test_9_4_a_wave_no_cells_folder_registers_is_named_as_the_option(
    pytester: pytest.Pytester,
) -> None:
    result = pytester.runpytest_subprocess("--sabot-wave=9")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    text = result.stderr.str()
    assert "pytest-sabot: --sabot-wave=9: " in text and "known waves: 1, 2, 3" in text


def test_9_4_rerun_errors_needs_resume(pytester: pytest.Pytester) -> None:
    text = _refused(pytester, "--sabot-rerun-errors")
    assert "--sabot-rerun-errors" in text and "--sabot-resume" in text


def test_9_4_an_unknown_key_in_a_data_file_is_named_as_unknown(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    root = tmp_path / "standard"
    for folder in ("cells", "tasks", "mappings"):
        shutil.copytree(standard_root() / folder, root / folder)
    wave = root / "cells" / "wave1.yaml"
    data = yaml.safe_load(wave.read_text())
    data["seed_file"] = data.pop("seeds_file")  # a misspelled key
    wave.write_text(yaml.safe_dump(data))
    text = _refused(pytester, f"--sabot-root={root}")
    assert "wave1.yaml" in text
    assert "'seed_file' is unknown" in text
    assert "missing beside it: 'seeds_file'" in text


def test_9_4_a_replay_that_does_not_cover_the_selection_is_refused_before_any_cell(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    recordings = tmp_path / "recordings"
    (recordings / "langgraph-default-baseline-T1-s11").mkdir(parents=True)
    (recordings / "langgraph-default-baseline-T1-s11" / "exchanges.jsonl").write_text("")
    text = _refused(pytester, f"--sabot-model=replay:{recordings}", *_ONE_CELL[:-1],
                    "--sabot-operator=baseline,O1")
    assert "1 selected cell(s) have no recording" in text
    assert "langgraph-default-O1-T1-s11" in text and "nothing was run" in text


@pytest.mark.slow
def test_9_4_a_base_url_a_keyless_run_cannot_use_is_said_and_not_recorded(
    tmp_path: Path,
) -> None:
    """--sabot-base-url is a live model's upstream: beside the embedded model it is said
    to be unused, and results.json names no upstream nothing was asked of."""
    from plugin_runs import run

    session = run(tmp_path, "--sabot-wave=1", "-p", "no:xdist",
                  "--sabot-base-url=http://127.0.0.1:9/v1",
                  "-k", "langgraph and default and O1 and T1 and s11")
    assert session.returncode == 0, session.describe()
    assert "--sabot-base-url=http://127.0.0.1:9/v1 (or SABOT_BASE_URL) was not used" in \
        session.stdout
    assert session.results.upstream is None


@pytest.mark.slow
def test_9_4_a_downgrade_model_the_embedded_model_ignores_is_said_and_not_recorded(
    tmp_path: Path,
) -> None:
    """The embedded model serves an O4 run from its persona's weak tier: a live model named
    with --sabot-downgrade-model is said to be unused, and results.json names no O4 model
    that served nothing."""
    from plugin_runs import run

    session = run(tmp_path, "--sabot-wave=1", "-p", "no:xdist",
                  "--sabot-downgrade-model=gpt-5.5-mini",
                  "-k", "langgraph and default and O4 and T1 and s11")
    assert session.returncode == 0, session.describe()
    assert "--sabot-downgrade-model=gpt-5.5-mini was not used" in session.stdout
    assert "weak tier" in session.stdout
    assert session.results.downgrade_model is None
