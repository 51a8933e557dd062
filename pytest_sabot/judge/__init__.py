"""The soft tier (standard section 6): a sandboxed, cross-lineage judge with measured
agreement. Backends, one registry of them (``pytest_sabot.judge.backends``): ``sim``
(keyless, embedded), ``claude-cli[:<model>]`` and ``openai:<model>``."""

from __future__ import annotations

from pytest_sabot.core.model_spec import ModelSpec, parse_judge
from pytest_sabot.judge.backends import EXPECTED_SPECS, JUDGES, JudgeBackend, JudgeBackendError


def make_backend(
    spec: str,
    *,
    pipeline_model: ModelSpec | str,
    gateway_url: str | None,
    allow_same_lineage: bool = False,
) -> tuple[JudgeBackend, str | None]:
    """A judge backend from its spec, plus a note for the report (or None). A judge of the
    pipeline model's lineage is refused unless allowed (the embedded judge is a fixture and
    has no lineage to share)."""
    from pytest_sabot.judge.backends.openai_judge import check_lineage

    if spec == "none":
        raise JudgeBackendError("no judge")
    judge = parse_judge(spec)
    if judge.scheme not in JUDGES:
        raise JudgeBackendError(f"--sabot-judge: expected {EXPECTED_SPECS}, got {spec!r}")
    note = None if judge.is_sim else check_lineage(judge, pipeline_model, allow_same_lineage)
    return JUDGES.load(judge.scheme)(judge, gateway_url), note


__all__ = ["JUDGES", "JudgeBackend", "JudgeBackendError", "make_backend"]
