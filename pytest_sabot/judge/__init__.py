"""The soft tier (standard section 6): a sandboxed, cross-lineage judge with measured
agreement. Backends: ``sim`` (keyless, embedded), ``claude-cli`` and ``openai:<model>``."""

from __future__ import annotations

from pytest_sabot.core.model_spec import ModelSpec
from pytest_sabot.judge.backends import JudgeBackend, JudgeBackendError


def make_backend(
    spec: str,
    *,
    pipeline_model: ModelSpec | str,
    gateway_url: str | None,
    allow_same_lineage: bool = False,
) -> tuple[JudgeBackend, str | None]:
    """A judge backend from its spec, plus a note for the report (or None)."""
    from pytest_sabot.judge.backends.openai_judge import check_lineage

    if spec in ("sim", "sim:judge"):
        from pytest_sabot.judge.backends.sim import SimJudge

        return SimJudge(), None
    if spec == "claude-cli" or spec.startswith("claude-cli:"):
        from pytest_sabot.judge.backends.claude_cli import ClaudeCliJudge

        model = spec.split(":", 1)[1] if ":" in spec else None
        return ClaudeCliJudge(model=model), check_lineage(
            "claude", pipeline_model, allow_same_lineage
        )
    if spec.startswith("openai:"):
        from pytest_sabot.judge.backends.openai_judge import OpenAIJudge

        note = check_lineage(spec, pipeline_model, allow_same_lineage)
        if gateway_url is None:
            raise JudgeBackendError("an openai: judge needs the session's gateway")
        return OpenAIJudge(spec, gateway_url), note
    if spec == "none":
        raise JudgeBackendError("no judge")
    raise JudgeBackendError(
        f"--sabot-judge: expected 'sim', 'claude-cli[:model]', 'openai:<model>' or 'none', "
        f"got {spec!r}"
    )


__all__ = ["JudgeBackend", "JudgeBackendError", "make_backend"]
