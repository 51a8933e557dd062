"""What the harness costs a CrewAI run, from one run of each kind (keyless, on the sim).

Measures, in one process against one local gateway serving the embedded model:

* ``import_s``      the one-time ``import crewai`` of the process (paid by its first run);
* ``first_run_s``   the first harness run (``run_cell``), import included;
* ``harness_run_s`` a second, warm harness run of the same cell;
* ``bare_run_s``    the same pipeline shape as bare CrewAI: the same prompts, the same
                    task tools and the same gateway, but no trace, no operators, no
                    event-bus handlers or model-call hooks (CrewAI's files
                    are still kept in a temp dir);
* ``ratio``         harness_run_s / bare_run_s.

Usage: python bench/harness_overhead_crewai.py [--model sim:vigilant] [--task T1]
Prints one JSON object. Timings are from a single run each: read them as an order of
magnitude, never as a gate.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


class _NoSeams:
    """Task tools with nothing in between: no recording, no operator."""

    def on_call(self, tool: str, call_id: str, args: dict[str, Any]) -> None:
        return None

    def on_result(self, tool: str, role: Any, call_number: int, observation: str) -> str:
        return observation

    def on_effect(
        self, tool: str, call_id: str, target: str, commit: Any, observation: str
    ) -> tuple[str, bool]:
        commit()
        return observation, True


def bare_run(gateway_url: str, model: str, task: str, seed: int, work_dir: Path) -> float:
    """The worker -> reviewer (-> revise -> reviewer) crews with no harness around them."""
    from crewai import LLM, Agent, Crew, Process, Task

    from pytest_sabot.adapters.crewai.pipeline import args_model, parse_verdict
    from pytest_sabot.gateway import GatewayClient
    from pytest_sabot.harness import prompts
    from pytest_sabot.tasks import load_public
    from pytest_sabot.tasks.world import Workspace, make_tools

    client = GatewayClient(gateway_url)
    view = load_public(task, ROOT, "v0.1")
    workspace = Workspace(work_dir)
    handles = make_tools(view, workspace, _NoSeams())  # type: ignore[arg-type]
    key = f"bench-bare-{task}~a1"
    started = time.perf_counter()
    client.register_run(key, f"crewai-default-baseline-{task}-s{seed}", seed, model, None)

    from crewai.tools import BaseTool

    def tool_of(handle: Any) -> BaseTool:
        class Plain(BaseTool):
            def _run(self, **kwargs: Any) -> str:
                return str(handle.invoke({k: v for k, v in kwargs.items() if v is not None}))

        return Plain(
            name=handle.name, description=handle.description, args_schema=args_model(handle)
        )

    tools = [tool_of(h) for h in handles]

    def llm(agent: str) -> Any:
        return LLM(
            model="gpt-5.6-terra",
            provider="openai",
            base_url=client.base_url(key, agent),
            api_key="sabot-local",
            max_retries=0,
        )

    def crew(role: str, system: str, user: str, agent_llm: Any, agent_tools: list[Any]) -> str:
        agent = Agent(
            role=role,
            goal="\n" + system,
            backstory="",
            llm=agent_llm,
            tools=agent_tools,
            cache=False,
            max_iter=8,
            max_retry_limit=0,
        )
        job = Task(description="\n" + user, expected_output="The complete reply.", agent=agent)
        out: Any = Crew(agents=[agent], tasks=[job], process=Process.sequential).kickoff()
        return str(out.raw)

    worker_llm, reviewer_llm = llm("worker"), llm("reviewer")
    feedback = ""
    for round_ in (0, 1):
        w = prompts.worker_messages(view, round_, feedback, None)
        draft = crew("worker", w.system, w.user, worker_llm, tools)
        r = prompts.reviewer_messages(
            view, draft, workspace.tool_log_text(), workspace.listing_text(), round_, False
        )
        verdict = parse_verdict(crew("reviewer", r.system, r.user, reviewer_llm, []))
        if verdict.decision != "reject":
            break
        feedback = verdict.reason
    client.close_run(key)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="sim:vigilant")
    parser.add_argument("--task", default="T1")
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args(argv)

    from pytest_sabot.adapters.crewai import _env as _crewai_env
    from pytest_sabot.core.models.cells import Cell
    from pytest_sabot.gateway import start_gateway
    from pytest_sabot.harness.run import RunSettings, run_cell
    from pytest_sabot.matrix.cells import load_wave

    spec, _ = load_wave(1, ROOT)
    cell = Cell(
        wave=1, framework="crewai", config="default", operator=None, task=args.task, seed=args.seed
    )
    with tempfile.TemporaryDirectory() as tmp, start_gateway() as gateway:
        out = Path(tmp)

        def harness_run(name: str) -> float:
            settings = RunSettings(
                root=ROOT,
                out_dir=out / name,
                gateway_url=gateway.url,
                model=args.model,
                timeout_s=600,
            )
            started = time.perf_counter()
            outcome = run_cell(cell, spec, settings)
            elapsed = time.perf_counter() - started
            if outcome.error:
                raise SystemExit(f"harness run failed: {outcome.error}")
            return elapsed

        first = harness_run("first")
        warm = harness_run("warm")
        # The bare run keeps CrewAI's own files inside the temp dir too (a few env
        # assignments; nothing of the harness's recording).
        with _crewai_env.isolated(out / "bare"):
            bare = bare_run(gateway.url, args.model, args.task, args.seed, out / "bare")
    cost = _crewai_env.import_cost()
    report = {
        "cell": cell.id,
        "model": args.model,
        "import_s": round(cost.seconds, 3) if cost else None,
        "first_run_s": round(first, 3),
        "harness_run_s": round(warm, 3),
        "bare_run_s": round(bare, 3),
        "ratio": round(warm / bare, 3) if bare > 0 else None,
    }
    json.dump(report, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
