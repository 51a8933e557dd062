"""Option definitions shared by the pytest plugin and the ``sabot`` command line, so the
two never drift. Settings resolve in one order: command line > environment > ini file >
default.

Every option has a type. A value of the wrong type is refused with the option's name,
what was expected and what was given: on the command line through argparse (a pytest
usage error, exit 4), from the environment or an ini file with the same words through
``OptionValueError``.
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pytest_sabot.core.limits import DEFAULT_MAX_MODEL_CALLS

Parse = Callable[[str], Any]


class OptionValueError(ValueError):
    """A value from the environment or an ini file that does not fit its option."""

    def __init__(self, spec: OptionSpec, source: str, message: str) -> None:
        self.spec = spec
        self.source = source
        super().__init__(f"{spec.flag} (from {source}): {message}")


def _refused(text: str, what: str) -> argparse.ArgumentTypeError:
    """The error for a value that is not ``what`` the option expects."""
    return argparse.ArgumentTypeError(f"expected {what}, got {text!r}")


def _number(text: str, what: str) -> float:
    try:
        value = float(str(text).strip())
    except ValueError:
        raise _refused(text, what) from None
    if not math.isfinite(value):
        raise _refused(text, what)
    return value


def fraction(text: str) -> float:
    """A fraction from 0 to 1. A percent (1 < x <= 100) is refused with the fraction it
    probably meant."""
    what = "a fraction from 0 to 1 such as 0.5"
    value = _number(text, what)
    if 1 < value <= 100:
        raise argparse.ArgumentTypeError(
            f"expected {what}, got {text!r}; this option takes a fraction, not a percent: "
            f"for {value:g}% write {value / 100:g}"
        )
    if not 0 <= value <= 1:
        raise _refused(text, what)
    return value


def seconds(text: str) -> float:
    """A duration in seconds, 0 or more."""
    value = _number(text, "a number of seconds such as 300 (0 turns the limit off)")
    if value < 0:
        raise _refused(text, "a number of seconds, 0 or more")
    return value


def duration(text: str) -> float:
    """A duration, 0 or more, in seconds: '800ms', '1.5s' or a plain number of seconds."""
    what = "a duration such as 800ms, 1.5s or 2 (seconds), 0 or more"
    raw = str(text).strip().lower()
    scale = 1.0
    if raw.endswith("ms"):
        raw, scale = raw[:-2], 0.001
    elif raw.endswith("s"):
        raw = raw[:-1]
    try:
        value = float(raw) * scale
    except ValueError:
        raise _refused(text, what) from None
    if not math.isfinite(value) or value < 0:
        raise _refused(text, what)
    return value


AUTO = 0  # --sabot-concurrency auto: the session chooses


def concurrency(text: str) -> int:
    """'auto' (``AUTO``: the session chooses) or a whole number, 1 or more."""
    if str(text).strip().lower() == "auto":
        return AUTO
    try:
        return positive_int(text)
    except argparse.ArgumentTypeError:
        raise _refused(text, "'auto' or a whole number, 1 or more, such as 8") from None


def usd(text: str) -> float:
    """An amount of US dollars, more than 0."""
    value = _number(text, "an amount of US dollars such as 25")
    if value <= 0:
        raise _refused(text, "an amount of US dollars above 0 such as 25")
    return value


def positive_int(text: str) -> int:
    """A whole number, 1 or more."""
    what = "a whole number, 1 or more, such as 8"
    try:
        value = int(str(text).strip())
    except ValueError:
        raise _refused(text, what) from None
    if value < 1:
        raise _refused(text, what)
    return value


def shard(text: str) -> str:
    """K/N: shard K (1..N) of N, returned as written back ("2/4")."""
    what = "K/N with 1 <= K <= N, such as 1/2"
    k, sep, n = str(text).strip().partition("/")
    try:
        index, count = int(k), int(n)
    except ValueError:
        raise _refused(text, what) from None
    if not sep or count < 1 or not 1 <= index <= count:
        raise _refused(text, what)
    return f"{index}/{count}"


def text_value(text: str) -> str:
    value = str(text).strip()
    if not value:
        raise argparse.ArgumentTypeError("expected a value, got an empty string")
    return value


@dataclass(frozen=True)
class OptionSpec:
    flag: str  # e.g. "--sabot-wave"
    dest: str  # e.g. "sabot_wave" (also the ini key)
    help: str
    default: Any = None
    kind: str = "str"  # str | bool | list | a typed value (see ``parse``)
    env: str | None = None
    parse: Parse | None = None  # the type: str -> value, argparse.ArgumentTypeError if not

    @property
    def typed(self) -> Parse:
        return self.parse or text_value


OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec(
        "--sabot-wave", "sabot_wave", "Run this wave of cells/ (e.g. 1, 2, 3).", env="SABOT_WAVE"
    ),
    OptionSpec(
        "--sabot-adapter",
        "sabot_adapter",
        "Register a local framework adapter for this session: module:factory, where the "
        "factory returns a FrameworkAdapter (comma list). Installed adapters register "
        "through the pytest_sabot.adapters entry points and need no option.",
        kind="list",
        env="SABOT_ADAPTER",
    ),
    OptionSpec(
        "--sabot-agent",
        "sabot_agent",
        "Run your own callable as the pipeline of the wave's cells: package.module:callable, "
        "run(context) in a supervised child process, one row '<name>-default' (the name "
        "from --sabot-agent-row, by default built from the callable: mypkg.agent:run -> "
        "mypkg_agent_run); needs --trust-local-agent; docs/TRUSTED_AGENTS.md.",
        env="SABOT_AGENT",
    ),
    OptionSpec(
        "--sabot-agent-row",
        "sabot_agent_row",
        "The name of --sabot-agent's row (lower-case letters, digits, underscores; not a "
        "registered framework's): its cells are <name>-default-..., and every report "
        "names it. Default: the callable's path, e.g. mypkg.agent:run -> mypkg_agent_run.",
        env="SABOT_AGENT_ROW",
    ),
    OptionSpec(
        "--sabot-agent-mapping",
        "sabot_agent_mapping",
        "The detection-act mapping of --sabot-agent's row (a YAML file shaped like "
        "mappings/<framework>.yaml, its 'framework' the row's name): which of the agent's "
        "reports are its own checks. Default: the shipped one (a review whose verdict line "
        "rejects, a retry with its reason, an escalation). Kept beside the session's manifest.",
        env="SABOT_AGENT_MAPPING",
    ),
    OptionSpec(
        "--sabot-agent-env",
        "sabot_agent_env",
        "Environment variables given to --sabot-agent's child besides its allow-list "
        "(repeatable, or a comma list). Their values are kept out of everything the "
        "session writes, like --sabot-secret-env's. Never the provider key.",
        kind="list",
        env="SABOT_AGENT_ENV",
    ),
    OptionSpec(
        "--trust-local-agent",
        "trust_local_agent",
        "Allow --sabot-agent to run your code: it is supervised (deadline, requests "
        "refused after it), not sandboxed. Run only code you trust.",
        kind="bool",
    ),
    OptionSpec(
        "--sabot-sandbox",
        "sabot_sandbox",
        "Run --sabot-agent's child in a bubblewrap sandbox: no network (its model calls "
        "travel over its pipe to the harness), a read-only view of its code and "
        "environment, no view of tasks/, the output or the harness's processes. Refused "
        "before anything runs where the machine cannot provide it.",
        kind="bool",
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
        "--sabot-shard",
        "sabot_shard",
        "Run shard K of N of the selection (K/N, e.g. 1/2): whole baseline groups, split the "
        "same way on every machine; sabot merge combines the shards' directories.",
        kind="shard",
        env="SABOT_SHARD",
        parse=shard,
    ),
    OptionSpec(
        "--sabot-fail-under",
        "sabot_fail_under",
        "Fail the session when any row's Sabot Score is under this fraction (0-1, e.g. 0.5), "
        "when a row has no valid fault cell, or when a fault cell's baseline is missing.",
        kind="fraction",
        parse=fraction,
    ),
    OptionSpec(
        "--sabot-max-run-errors",
        "sabot_max_run_errors",
        "Fail the session when more than this fraction (0-1) of the recorded cells are "
        "RUN_ERROR (default 0.05).",
        default=0.05,
        kind="fraction",
        parse=fraction,
    ),
    OptionSpec(
        "--sabot-resume",
        "sabot_resume",
        "Keep the records of an earlier session in --sabot-out and run only the selected "
        "cells that have none.",
        default=False,
        kind="bool",
    ),
    OptionSpec(
        "--sabot-rerun-errors",
        "sabot_rerun_errors",
        "With --sabot-resume: also run again the cells recorded as RUN_ERROR (their records "
        "are set aside; results.json lists them).",
        default=False,
        kind="bool",
    ),
    OptionSpec(
        "--sabot-timeout",
        "sabot_timeout",
        "Time limit of one attempt of a cell's pipeline, in seconds (default 300; 0: none). "
        "With pytest-timeout's --timeout the smaller of the two applies.",
        default=300.0,
        kind="seconds",
        parse=seconds,
    ),
    OptionSpec(
        "--sabot-max-model-calls",
        "sabot_max_model_calls",
        "The runaway guard: model calls one attempt of a cell may make (a whole number, "
        f"default {DEFAULT_MAX_MODEL_CALLS}; the shipped pipelines make at most 64 on keyless "
        "wave 1). The first call past it is refused and the cell ends as a run error "
        "'Runaway'.",
        default=DEFAULT_MAX_MODEL_CALLS,
        kind="int",
        parse=positive_int,
    ),
    OptionSpec(
        "--sabot-budget-usd",
        "sabot_budget_usd",
        "Hard spend cap for live runs across all workers, in USD (default 500).",
        default=500.0,
        kind="usd",
        parse=usd,
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
        "Upstream concurrency limit for live runs (a whole number, default 8).",
        default=8,
        kind="int",
        parse=positive_int,
    ),
    OptionSpec(
        "--sabot-concurrency",
        "sabot_concurrency",
        "Cells in flight at once in each process that runs cells: 'auto' (default: 1 for "
        "the embedded model answering at once; for a live, local or latency-shaped model "
        "the process's share of --sabot-max-connections and a quarter more) or a whole "
        "number (a trusted agent's cells run one at a time). Every cell's record is the "
        "same as in a run one cell at a time.",
        default=AUTO,
        kind="concurrency",
        parse=concurrency,
        env="SABOT_CONCURRENCY",
    ),
    OptionSpec(
        "--sabot-sim-latency",
        "sabot_sim_latency",
        "Make the embedded model answer in a provider's time: the median of a seeded "
        "lognormal per call (e.g. 800ms, 1s; default 0: at once). Each call holds one of "
        "--sabot-max-connections; the answers, and so the verdicts, are unchanged.",
        default=0.0,
        kind="duration",
        parse=duration,
        env="SABOT_SIM_LATENCY",
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
        "--sabot-history",
        "sabot_history",
        "The run history (an SQLite file) this session is recorded in when it ends "
        "(default: history.sqlite in the parent of the output directory, e.g. "
        "reports/history.sqlite; an output directory made directly in the working directory "
        "is recorded in reports/history.sqlite; 'none': not recorded). See docs/HISTORY.md.",
        env="SABOT_HISTORY",
    ),
    OptionSpec(
        "--sabot-secret-env",
        "sabot_secret_env",
        "Environment variables holding secrets of your own (comma list, e.g. "
        "MY_SERVICE_TOKEN): their values are replaced by [REDACTED] in everything the "
        "session writes (traces, results, reports, logs, JUnit XML), like the provider key "
        "and the gateway's secret already are.",
        kind="list",
        env="SABOT_SECRET_ENV",
    ),
    OptionSpec(
        "--sabot-upstream-deadline",
        "sabot_upstream_deadline",
        "Overall deadline in seconds of one live model call, retries, backoff and waiting "
        "for room under the cap included; past it the call fails (HTTP 504) and the cell "
        "records a run error (default 240, under the 300 s cell timeout).",
        default=240.0,
        kind="float",
        parse=seconds,
    ),
)

BY_DEST = {o.dest: o for o in OPTIONS}


def convert(spec: OptionSpec, raw: Any) -> Any:
    """Turn a raw value into the option's type; None (or empty) gives the default.
    argparse.ArgumentTypeError when the value does not fit."""
    if raw is None or raw == "" or raw == []:
        return spec.default
    if spec.kind == "bool":
        if isinstance(raw, bool):
            return raw
        text = str(raw).strip().lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off"):
            return False
        raise argparse.ArgumentTypeError(f"expected true or false, got {raw!r}")
    if spec.kind == "list":
        items = raw if isinstance(raw, list) else [raw]
        return [part.strip() for item in items for part in str(item).split(",") if part.strip()]
    if isinstance(raw, str):
        return spec.typed(raw)
    return raw  # already typed (argparse applied ``parse`` on the command line)


def resolve(spec: OptionSpec, cli_value: Any, ini_value: Any) -> Any:
    """command line > environment > ini > default; OptionValueError names the source."""
    if cli_value is not None and cli_value is not False and cli_value != []:
        try:
            return convert(spec, cli_value)
        except argparse.ArgumentTypeError as exc:
            raise OptionValueError(spec, "the command line", str(exc)) from None
    if spec.env and os.environ.get(spec.env):
        try:
            return convert(spec, os.environ[spec.env])
        except argparse.ArgumentTypeError as exc:
            raise OptionValueError(
                spec, f"environment variable {spec.env}", str(exc)
            ) from None
    if ini_value is not None and ini_value != "" and ini_value != []:
        try:
            return convert(spec, ini_value)
        except argparse.ArgumentTypeError as exc:
            raise OptionValueError(spec, f"ini key {spec.dest}", str(exc)) from None
    return spec.default
