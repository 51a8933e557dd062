"""The model spec is parsed once into a typed value (issue 11); what records carry is the
text as given."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_sabot.core.model_spec import ModelSpec, downgrade_target, parse_judge, parse_model
from pytest_sabot.gateway.protocol import Downgrade
from pytest_sabot.gateway.routing import downgrade_spec
from pytest_sabot.harness.run import RunSettings


@pytest.mark.parametrize(
    ("text", "scheme", "name", "canonical", "kind"),
    [
        ("sim", "sim", "realistic", "sim:realistic", "sim"),
        ("sim:vigilant-weak", "sim", "vigilant-weak", "sim:vigilant-weak", "sim"),
        ("openai:gpt-5.6-terra", "openai", "gpt-5.6-terra", "openai:gpt-5.6-terra", "live"),
        ("replay:/r/recordings", "replay", "/r/recordings", "replay:/r/recordings", "replay"),
    ],
)
def test_9_4_a_model_spec_reads_the_same_everywhere(
    text: str, scheme: str, name: str, canonical: str, kind: str
) -> None:
    spec = parse_model(text)
    assert (spec.scheme, spec.name, spec.text, spec.given, str(spec)) == (
        scheme, name, canonical, text, text
    )
    assert (spec.is_sim, spec.is_live, spec.is_replay) == (
        kind == "sim", kind == "live", kind == "replay"
    )
    assert spec.costs_nothing is (kind != "live")
    assert parse_model(spec) is spec


@pytest.mark.parametrize("text", ["gpt-5.6-terra", "openai:", ":x", ""])
def test_9_4_a_malformed_model_spec_names_the_accepted_forms(text: str) -> None:
    with pytest.raises(ValueError, match=r"is not 'sim', 'sim:<persona>', 'openai:<model>'"):
        parse_model(text)


def test_a_judge_spec_may_be_a_scheme_alone() -> None:
    assert (parse_judge("claude-cli").scheme, parse_judge("claude-cli").name) == ("claude-cli", "")
    assert parse_judge("claude-cli:opus").name == "opus"
    assert parse_judge("sim").is_sim


def test_the_o4_target_is_a_model_of_the_runs_backend_unless_named_whole() -> None:
    live = parse_model("openai:gpt-5.6-terra")
    assert downgrade_target("gpt-5.6-luna", live) == ModelSpec("openai", "gpt-5.6-luna")
    assert downgrade_target("replay:/x", live).is_replay
    sim = parse_model("sim:vigilant")
    # the embedded model's downgrade is its persona's weak tier whatever live name is given
    def swap(model: str) -> str:
        return downgrade_spec(sim, Downgrade(agent="worker", from_call=0, model=model)).text

    assert swap("gpt-5.6-luna") == "sim:vigilant-weak"
    assert swap("sim:credulous") == "sim:credulous"


def test_run_settings_parse_the_text_they_are_given_once(tmp_path: Path) -> None:
    settings = RunSettings(root=tmp_path, out_dir=tmp_path, gateway_url="", model="sim")
    assert isinstance(settings.model, ModelSpec)
    assert settings.model.given == "sim" and settings.model.name == "realistic"
    with pytest.raises(ValueError):
        RunSettings(root=tmp_path, out_dir=tmp_path, gateway_url="", model="gpt-5.6-terra")
