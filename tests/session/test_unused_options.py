"""Options a session was given and will not use are said at its end, and what it records
names only what served it (preflight.unused_options, Settings.downgrade_in_use)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_sabot.session.preflight import unused_options
from pytest_sabot.session.settings import Settings, read_settings


def _settings(pytester: pytest.Pytester, *args: str) -> Settings:
    return read_settings(pytester.parseconfig(*args))


@pytest.mark.parametrize(
    ("model", "given", "in_use"),
    [
        ("sim:realistic", "gpt-5.5-mini", None),
        ("sim:realistic", "sim:lazy-weak", "sim:lazy-weak"),
        ("openai:gpt-5.5", "gpt-5.5-mini", "gpt-5.5-mini"),
        ("sim:realistic", None, None),
    ],
)
def test_downgrade_model_is_recorded_only_where_it_serves_o4(
    pytester: pytest.Pytester, model: str, given: str | None, in_use: str | None
) -> None:
    extra = [f"--sabot-downgrade-model={given}"] if given else []
    settings = _settings(pytester, f"--sabot-model={model}", *extra)
    assert settings.downgrade_in_use == in_use
    said = any("--sabot-downgrade-model" in line for line in unused_options(settings))
    assert said == (given is not None and in_use is None)


def test_downgrade_model_beside_a_replay_is_said_unused(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    settings = _settings(
        pytester, f"--sabot-model=replay:{tmp_path}", "--sabot-downgrade-model=gpt-5.5-mini"
    )
    assert settings.downgrade_in_use is None
    (line,) = unused_options(settings)
    assert "--sabot-downgrade-model=gpt-5.5-mini was not used" in line
    assert "recorded" in line
