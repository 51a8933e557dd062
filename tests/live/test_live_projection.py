"""Issue 22 item 6 (standard section 8, SPEC I52, I99): a live session projects its cost
before its first call. When the selection does not fit what the project's cap leaves, the
session is refused with the plan (seeds cut 5 -> 3 named when that fits), so the breaker
never has to cut cells; the cut selection then runs whole.

Against a loopback provider; the price table given with --sabot-prices holds a call's
worst case at 4,000 output tokens, so a cap of a dollar admits every call of the slice."""

from __future__ import annotations

from pathlib import Path

import pytest
from live_provider import FakeProvider
from live_sessions import MODEL, clean_env, run_session

pytestmark = pytest.mark.slow

SLICE = ["--sabot-wave=1", "--sabot-framework=langgraph", "--sabot-config=default",
         "--sabot-task=T1", "--sabot-operator=baseline,O1", "-p", "no:cacheprovider",
         "-p", "no:xdist", f"--sabot-model={MODEL}"]
PRICES = """version: 1
models:
  gpt-5.6-terra:
    input: 2.50
    cached_input: 0.25
    output: 15.00
    max_output_tokens: 4000
  gpt-5.6-luna:
    input: 0.75
    cached_input: 0.075
    output: 4.50
    max_output_tokens: 4000
"""


def _session(where: Path, canary: str, provider: FakeProvider, *args: str) -> object:
    prices = where.parent / "prices.yaml"
    prices.write_text(PRICES, encoding="utf-8")
    return run_session(
        where,
        [*SLICE, f"--sabot-base-url={provider.url}", f"--sabot-prices={prices}", *args],
        clean_env({"OPENAI_API_KEY": canary}),
        provider.log,
    )


def test_I99_a_live_session_over_the_cap_is_refused_with_the_seed_cut_before_any_call(
    tmp_path: Path, canary: str
) -> None:
    with FakeProvider(canary, persona="vigilant", seed=11) as provider:
        refused = _session(tmp_path / "refused", canary, provider, "--sabot-budget-usd=0.9")
        served = provider.log()
    assert refused.returncode == pytest.ExitCode.USAGE_ERROR, refused.stdout[-2000:]
    said = refused.stderr + refused.stdout
    assert "projected at $0.98" in said and "$0.90 the project's cap" in said, said[-2000:]
    assert "seeds 5 -> 3 before any cell is cut" in said
    assert "--sabot-seed=11,12,13 (projected $0.59)" in said
    assert "nothing was run" in said
    assert served == []  # not one call reached the provider
    assert not (refused.out / "cells").exists()


def test_I99_the_cut_selection_runs_whole_under_the_same_cap(
    tmp_path: Path, canary: str
) -> None:
    with FakeProvider(canary, persona="vigilant", seed=11) as provider:
        cut = _session(tmp_path / "cut", canary, provider, "--sabot-budget-usd=0.9",
                       "--sabot-seed=11,12,13")
    assert cut.returncode == 0, cut.stdout[-3000:]
    results = cut.results
    assert results.selection.complete and results.selection.selected == 6
    assert results.session is not None and results.session.status == "complete"
    assert results.spend is not None
    assert results.spend["budget"]["spent_usd"] <= 0.9


def test_I99_a_selection_over_the_cap_even_with_the_cut_is_refused(
    tmp_path: Path, canary: str
) -> None:
    with FakeProvider(canary, persona="vigilant", seed=11) as provider:
        refused = _session(tmp_path / "over", canary, provider, "--sabot-budget-usd=0.3")
        served = provider.log()
    assert refused.returncode == pytest.ExitCode.USAGE_ERROR
    said = refused.stderr + refused.stdout
    assert "even with seeds cut to 3" in said and "raise --sabot-budget-usd" in said
    assert served == []
