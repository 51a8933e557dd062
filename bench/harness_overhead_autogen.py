"""What the harness costs an AutoGen run, from one run of each kind (keyless, on the sim).

In one process, against one local gateway serving the embedded model, for each config
(default: RoundRobin worker + critic stages; guardrail: Magentic-One):

* ``import_s``       the one-time import of autogen-agentchat/-ext in this process;
* ``first_run_s``    the first harness run of the config (``run_cell``);
* ``harness_run_s``  a second, warm harness run of the same cell;
* ``bare_run_s``     the same teams as bare AutoGen: same prompts, same task tools, same
                     gateway and model, but no trace, no operator, no trace-logger capture,
                     no model-call syncing, no outcome files;
* ``ratio``          harness_run_s / bare_run_s.

Usage: python bench/harness_overhead_autogen.py [--model sim:vigilant] [--task T1]
Prints one JSON object. Each number comes from a single run: read it as an order of
magnitude, never as a gate.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
WAVE = 2


def _nothing() -> None:
    return None


async def _bare_default(view: Any, workspace: Any, handles: list[Any], url: Any) -> None:
    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.conditions import TextMentionTermination
    from autogen_agentchat.messages import TextMessage
    from autogen_agentchat.teams import RoundRobinGroupChat

    from pytest_sabot.adapters.autogen import pipeline as ag
    from pytest_sabot.harness import prompts

    worker_client, critic_client = url("worker"), url("reviewer")
    feedback = ""
    for round_ in (0, 1):
        w = prompts.worker_messages(view, round_, feedback, None)
        worker = AssistantAgent(
            "worker",
            worker_client,
            tools=[ag.HarnessTool(h, _nothing) for h in handles],
            system_message=w.system,
            reflect_on_tool_use=True,
            max_tool_iterations=ag.WORKER_TOOL_ITERATIONS,
        )
        team = RoundRobinGroupChat(
            [worker],
            termination_condition=TextMentionTermination("TERMINATE", sources=["worker"]),
            max_turns=1,
        )
        result = await team.run(task=w.user)
        draft = next(m.content for m in reversed(result.messages) if isinstance(m, TextMessage))
        r = prompts.reviewer_messages(
            view, draft, workspace.tool_log_text(), workspace.listing_text(), round_, True
        )
        critic = AssistantAgent("critic", critic_client, system_message=r.system)
        team = RoundRobinGroupChat(
            [critic],
            termination_condition=TextMentionTermination("VERDICT:", sources=["critic"]),
            max_turns=1,
        )
        result = await team.run(task=r.user)
        reply = next(m.content for m in reversed(result.messages) if isinstance(m, TextMessage))
        verdict = ag.parse_verdict(reply)
        if round_ == 1 or verdict is None or verdict[0] != "reject":
            break
        feedback = verdict[1] or reply
    await worker_client.close()
    await critic_client.close()


async def _bare_magentic(view: Any, handles: list[Any], url: Any) -> None:
    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.messages import TextMessage
    from autogen_agentchat.teams import MagenticOneGroupChat

    from pytest_sabot.adapters.autogen import pipeline as ag
    from pytest_sabot.core.verdict_token import strip_flags_head
    from pytest_sabot.harness import prompts

    worker_client, orchestrator_client = url("worker"), url("orchestrator")
    worker = AssistantAgent(
        "worker",
        worker_client,
        tools=[ag.HarnessTool(h, _nothing) for h in handles if ag.tool_role(h) == "data"],
        description=ag.MAGENTIC_WORKER_DESCRIPTION,
        system_message=ag.MAGENTIC_WORKER_SYSTEM,
        reflect_on_tool_use=True,
        max_tool_iterations=ag.WORKER_TOOL_ITERATIONS,
    )
    team = MagenticOneGroupChat(
        [worker],
        model_client=orchestrator_client,
        max_stalls=ag.MAX_STALLS,
        max_turns=ag.MAX_TURNS,
    )
    result = await team.run(task=prompts.magentic_task(view, True, None))
    final = next(
        m.content
        for m in reversed(result.messages)
        if isinstance(m, TextMessage) and m.source == ag.ORCHESTRATOR
    )
    body = strip_flags_head(final)[1]
    for handle in handles:
        if ag.tool_role(handle) in ("check", "write"):
            handle.invoke(ag.arguments_for_artifact(handle, body))
    await worker_client.close()
    await orchestrator_client.close()


def bare_run(gateway_url: str, model: str, config: str, task: str, seed: int, work: Path) -> float:
    """One pipeline run of ``config`` as bare AutoGen teams; returns seconds."""
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    from pytest_sabot.adapters.autogen import pipeline as ag
    from pytest_sabot.gateway import GatewayClient
    from pytest_sabot.tasks import load_public
    from pytest_sabot.tasks.world import PassThroughSeams, Workspace, make_tools

    client = GatewayClient(gateway_url)
    view = load_public(task, ROOT, "v0.2")
    workspace = Workspace(work)
    handles = make_tools(view, workspace, PassThroughSeams())
    key = f"bench-bare-autogen-{config}-{task}~a1"

    def url(agent: str) -> Any:
        return OpenAIChatCompletionClient(
            model="gpt-5.6-terra",
            base_url=client.base_url(key, agent),
            api_key="sabot-local",
            max_retries=0,
            model_info=ag.UNKNOWN_MODEL_INFO,
        )

    started = time.perf_counter()
    client.register_run(key, f"autogen-{config}-baseline-{task}-s{seed}", seed, model, None)
    if config == "guardrail":
        asyncio.run(_bare_magentic(view, handles, url))
    else:
        asyncio.run(_bare_default(view, workspace, handles, url))
    client.close_run(key)
    return time.perf_counter() - started


def harness_run(
    gateway_url: str, model: str, config: str, task: str, seed: int, out: Path
) -> float:
    from pytest_sabot.core.models.cells import Cell
    from pytest_sabot.harness.run import RunSettings, run_cell
    from pytest_sabot.matrix.cells import load_wave_spec, wave_path

    spec = load_wave_spec(wave_path(WAVE, ROOT), WAVE)
    settings = RunSettings(root=ROOT, out_dir=out, gateway_url=gateway_url, model=model)
    cell = Cell(wave=WAVE, framework="autogen", config=config, operator=None, task=task, seed=seed)
    started = time.perf_counter()
    outcome = run_cell(cell, spec, settings)
    elapsed = time.perf_counter() - started
    if outcome.error is not None:
        raise SystemExit(f"harness run failed: {outcome.error}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--model", default="sim:vigilant", help="Gateway model (keyless sim).")
    parser.add_argument("--task", default="T1", help="Task id, T1..T5.")
    parser.add_argument("--seed", type=int, default=11, help="Cell seed.")
    args = parser.parse_args(argv)

    from pytest_sabot.gateway.server import start_gateway

    report: dict[str, Any] = {"model": args.model, "task": args.task, "seed": args.seed}
    started = time.perf_counter()
    import autogen_agentchat.teams  # noqa: F401
    import autogen_ext.models.openai  # noqa: F401

    report["import_s"] = round(time.perf_counter() - started, 3)
    with start_gateway() as gateway, tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for config in ("default", "guardrail"):
            first = harness_run(gateway.url, args.model, config, args.task, args.seed, work / "a")
            warm = harness_run(gateway.url, args.model, config, args.task, args.seed, work / "b")
            bare = bare_run(gateway.url, args.model, config, args.task, args.seed, work / config)
            report[config] = {
                "first_run_s": round(first, 3),
                "harness_run_s": round(warm, 3),
                "bare_run_s": round(bare, 3),
                "ratio": round(warm / bare, 2) if bare > 0 else None,
            }
    json.dump(report, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
