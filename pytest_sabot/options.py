"""Option definitions shared by the pytest plugin and the ``sabot`` command line, so the
two never drift. Settings resolve in one order: command line > environment > ini file >
default."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class OptionSpec:
    flag: str  # e.g. "--sabot-wave"
    dest: str  # e.g. "sabot_wave" (also the ini key)
    help: str
    default: Any = None
    kind: str = "str"  # str | int | float | bool | list
    env: str | None = None


OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec(
        "--sabot-wave", "sabot_wave", "Run this wave of cells/ (e.g. 1, 2, 3).", env="SABOT_WAVE"
    ),
    OptionSpec(
        "--sabot-model",
        "sabot_model",
        "Pipeline model: 'sim' / 'sim:<persona>' (keyless, default sim:realistic), "
        "'openai:<model>' (live, opt-in, key from OPENAI_API_KEY) or 'replay:<dir>'.",
        default="sim:realistic",
        env="SABOT_MODEL",
    ),
    OptionSpec(
        "--sabot-base-url",
        "sabot_base_url",
        "OpenAI-compatible upstream for openai: models (vLLM, Ollama, llama.cpp...).",
        env="SABOT_BASE_URL",
    ),
    OptionSpec(
        "--sabot-downgrade-model",
        "sabot_downgrade_model",
        "O4 target for live runs (default: the wave's pinned downgrade model).",
    ),
    OptionSpec(
        "--sabot-root",
        "sabot_root",
        "Directory holding your own cells/, tasks/ and mappings/.",
        env="SABOT_ROOT",
    ),
    OptionSpec("--sabot-out", "sabot_out", "Output directory (default reports/wave-N)."),
    OptionSpec(
        "--sabot-rules",
        "sabot_rules",
        "Score under this rule version instead of the wave's own (both are kept).",
    ),
    OptionSpec(
        "--sabot-framework", "sabot_framework", "Only these frameworks (comma list).", kind="list"
    ),
    OptionSpec("--sabot-config", "sabot_config", "Only these configs (comma list).", kind="list"),
    OptionSpec(
        "--sabot-operator",
        "sabot_operator",
        "Only these operators (comma list; 'baseline' for baselines).",
        kind="list",
    ),
    OptionSpec("--sabot-task", "sabot_task", "Only these tasks (comma list).", kind="list"),
    OptionSpec("--sabot-seed", "sabot_seed", "Only these seeds (comma list).", kind="list"),
    OptionSpec(
        "--sabot-fail-under",
        "sabot_fail_under",
        "Fail the session when any row's Sabot Score is under this fraction (0-1).",
        kind="float",
    ),
    OptionSpec(
        "--sabot-resume",
        "sabot_resume",
        "Keep finished cells of an earlier, interrupted session; run only the rest.",
        default=False,
        kind="bool",
    ),
    OptionSpec(
        "--sabot-timeout",
        "sabot_timeout",
        "Per-cell timeout in seconds.",
        default=300.0,
        kind="float",
    ),
    OptionSpec(
        "--sabot-budget-usd",
        "sabot_budget_usd",
        "Hard spend cap for live runs across all workers (default 500).",
        default=500.0,
        kind="float",
    ),
    OptionSpec(
        "--sabot-prices",
        "sabot_prices",
        "Price table YAML (USD per 1M input, cached input, output tokens per model) "
        "replacing the shipped one, e.g. for a local server's model names.",
    ),
    OptionSpec(
        "--sabot-max-connections",
        "sabot_max_connections",
        "Upstream concurrency limit for live runs.",
        default=8,
        kind="int",
    ),
    OptionSpec(
        "--sabot-judge",
        "sabot_judge",
        "Soft-tier judge: 'sim' (keyless, default), 'claude-cli[:model]', "
        "'openai:<model>' or 'none'.",
        default="sim",
        env="SABOT_JUDGE",
    ),
    OptionSpec(
        "--sabot-judge-same-lineage",
        "sabot_judge_same_lineage",
        "Allow a judge of the same model lineage as the pipeline (reported).",
        default=False,
        kind="bool",
    ),
    OptionSpec(
        "--sabot-gateway-url",
        "sabot_gateway_url",
        "Use an already running gateway instead of starting one.",
    ),
    OptionSpec(
        "--sabot-spend-ledger",
        "sabot_spend_ledger",
        "Directory whose spend-ledger.json keeps the project's live spend, so the budget cap "
        "holds across sessions, waves and resumes (default: the parent of the output "
        "directory, e.g. reports/).",
        env="SABOT_SPEND_LEDGER",
    ),
    OptionSpec(
        "--sabot-upstream-deadline",
        "sabot_upstream_deadline",
        "Overall deadline in seconds of one live model call, retries, backoff and waiting "
        "for room under the cap included; past it the call fails (HTTP 504) and the cell "
        "records a run error (default 240, under the 300 s cell timeout).",
        default=240.0,
        kind="float",
    ),
)

BY_DEST = {o.dest: o for o in OPTIONS}


def convert(spec: OptionSpec, raw: Any) -> Any:
    """Turn a raw (string) value into the option's type; None stays None."""
    if raw is None or raw == "" or raw == []:
        return spec.default
    if spec.kind == "int":
        return int(raw)
    if spec.kind == "float":
        return float(raw)
    if spec.kind == "bool":
        return raw if isinstance(raw, bool) else str(raw).lower() in ("1", "true", "yes", "on")
    if spec.kind == "list":
        items = raw if isinstance(raw, list) else [raw]
        return [part.strip() for item in items for part in str(item).split(",") if part.strip()]
    return str(raw)


def resolve(spec: OptionSpec, cli_value: Any, ini_value: Any) -> Any:
    """command line > environment > ini > default."""
    if cli_value not in (None, [], False):
        return convert(spec, cli_value)
    if spec.env and os.environ.get(spec.env):
        return convert(spec, os.environ[spec.env])
    if ini_value not in (None, "", []):
        return convert(spec, ini_value)
    return spec.default
