"""A judge reached over the OpenAI chat API through the session's gateway (budget, recording
and secrets handling stay in one place). The standard wants a judge of another lineage than
the pipeline model; a same-lineage judge is refused unless explicitly allowed, and the
report says so."""

from __future__ import annotations

import contextlib
import itertools

from pytest_sabot.core.model_spec import ModelSpec, parse_judge
from pytest_sabot.judge.backends import EXPECTED_SPECS, JudgeBackendError

_FAMILIES = (
    ("openai", ("gpt-", "o1", "o3", "o4", "chatgpt", "text-davinci")),
    ("anthropic", ("claude",)),
    ("google", ("gemini", "gemma")),
    ("meta", ("llama",)),
    ("alibaba", ("qwen",)),
    ("mistral", ("mistral", "mixtral", "codestral")),
    ("deepseek", ("deepseek",)),
    ("sim", ("sim",)),
)


def lineage_of(model: ModelSpec | str) -> str:
    """Model family of a model spec ('openai:gpt-5.6-terra' -> 'openai', 'claude-cli' ->
    'anthropic'); 'unknown' else."""
    spec = parse_judge(model)
    if spec.is_sim:
        return "sim"
    if spec.scheme == "claude-cli":
        return "anthropic"
    low = (spec.name if spec.is_live else spec.given).lower()
    for family, prefixes in _FAMILIES:
        if low.startswith(prefixes):
            return family
    return "unknown"


def check_lineage(
    judge_model: ModelSpec | str, pipeline_model: ModelSpec | str, allow_same: bool
) -> str | None:
    """None when acceptable; a note when allowed despite sharing a lineage; raises else."""
    judge, pipeline = lineage_of(judge_model), lineage_of(pipeline_model)
    if judge != pipeline or judge == "unknown":
        return None
    if not allow_same:
        raise JudgeBackendError(
            f"judge {str(judge_model)!r} is of the same lineage ({judge}) as the pipeline "
            f"model {str(pipeline_model)!r}; the standard asks for a cross-lineage judge "
            "(allow it explicitly with --sabot-judge-same-lineage)"
        )
    return f"same-lineage judge allowed explicitly ({judge})"


def openai_judge(spec: ModelSpec, gateway_url: str | None) -> OpenAIJudge:
    """The registry's factory of ``openai:<model>``: a judge reached through the session's
    gateway (its budget, recording and secrets handling)."""
    if not spec.name:
        raise JudgeBackendError(f"--sabot-judge: expected {EXPECTED_SPECS}, got {spec.given!r}")
    if gateway_url is None:
        raise JudgeBackendError("an openai: judge needs the session's gateway")
    return OpenAIJudge(spec.given, gateway_url)


class OpenAIJudge:
    fixture = False

    def __init__(self, model: str, gateway_url: str) -> None:
        from pytest_sabot.gateway import GatewayClient

        self.model = model
        self.name = model
        self.lineage = lineage_of(model)
        self.gateway = GatewayClient(gateway_url)
        self._counter = itertools.count()

    def complete(self, prompt: str) -> str:
        import openai

        from pytest_sabot.gateway.loopback import sync_client

        run_key = f"judge~{next(self._counter)}"
        try:
            self.gateway.register_run(run_key, "judge", 0, self.model)
            client = openai.OpenAI(
                base_url=self.gateway.base_url(run_key, "judge"),
                api_key="sabot-local",
                max_retries=0,
                http_client=sync_client(),
            )
            reply = client.chat.completions.create(
                model=parse_judge(self.model).name,
                messages=[{"role": "user", "content": prompt}],
                response_format={"type": "json_object"},
            )
        except Exception as exc:
            raise JudgeBackendError(f"judge call failed: {type(exc).__name__}: {exc}") from exc
        finally:
            with contextlib.suppress(Exception):
                self.gateway.close_run(run_key)
        return reply.choices[0].message.content or ""

    def assert_sandboxed(self) -> None:
        return None  # a chat completion has no tools
