"""What the harness costs a LangGraph run, from one run of each kind (keyless, on the sim).

Measures, in one process against one local gateway serving the embedded model:

* ``import_s``       the one-time import of langgraph + langchain-openai (first run pays it);
* ``first_run_s``    the first harness run (``run_cell``), imports included;
* ``harness_run_s``  a warm harness run of the same cell (after one untimed bare run, so
                     both paths are warm): task view, trace file with an fsync, gateway
                     drain after every model call and node, operator seams, probe, pass
                     criterion, outcome.json;
* ``bare_run_s``     the same compiled graph (``compiled_graph``) with the same prompts, the
                     same task tools and the same gateway and model, but a context that
                     records nothing: no trace, no drains, no operator, no outcome;
* ``ratio``          harness_run_s / bare_run_s.

Usage: python bench/harness_overhead_langgraph.py [--model sim:vigilant] [--task T1]
                                                  [--config guardrail] [--seed 11]
Prints one JSON object. Every timing is from a single run: read it as an order of
magnitude, never as a gate.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


class _NoTrace:
    """A trace sink that keeps nothing."""

    def emit(self, kind: str, component: str, text: str = "", **data: Any) -> None:
        return None

    @property
    def next_seq(self) -> int:
        return 0


@dataclass
class BareContext:
    """The graph's inputs with no harness around them (same prompts, tools, gateway)."""

    cell: Any
    run_dir: Path
    view: Any
    gateway: Any
    run_key: str
    model_name: str
    api_key: str = "sabot-local"
    flags_protocol: bool = False
    trace: _NoTrace = field(default_factory=_NoTrace)
    emitted: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        from pytest_sabot.tasks.world import PassThroughSeams, Workspace, make_tools

        self.workspace = Workspace(self.run_dir)
        self._tools = make_tools(self.view, self.workspace, PassThroughSeams())

    def base_url(self, agent: str) -> str:
        return str(self.gateway.base_url(self.run_key, agent))

    def http_client(self) -> Any:
        from pytest_sabot.gateway import loopback

        return loopback.sync_client()

    def http_async_client(self) -> Any:
        from pytest_sabot.gateway import loopback

        return loopback.async_client()

    @property
    def tools(self) -> list[Any]:
        return list(self._tools)

    def worker_prompt(self, round: int, feedback: str = "") -> Any:
        from pytest_sabot.harness import prompts

        return prompts.worker_messages(self.view, round, feedback, None)

    def handoff(self, sender: str, receiver: str, text: str) -> str:
        return text

    def reviewer_prompt(self, delivered: str, round: int) -> Any:
        from pytest_sabot.harness import prompts

        return prompts.reviewer_messages(
            self.view,
            delivered,
            self.workspace.tool_log_text(),
            self.workspace.listing_text(),
            round,
            self.flags_protocol,
        )

    def guardrail_text(self) -> str:
        return ""

    def check_contract(self, artifact: str) -> list[str]:
        from pytest_sabot.tasks import check_contract

        return check_contract(self.view.contract, artifact)

    def magentic_task(self) -> str:
        return ""

    def sync_model_calls(self) -> None:
        return None

    def emit(self, text: str) -> None:
        self.emitted.append(text)


def bare_run(std: Any, cell: Any, gateway_url: str, model: str, work_dir: Path) -> float:
    from pytest_sabot.adapters.langgraph.pipeline import run
    from pytest_sabot.gateway import GatewayClient
    from pytest_sabot.harness.run import RunSettings, frameworks_model_name
    from pytest_sabot.tasks import load_public

    client = GatewayClient(gateway_url)
    view = load_public(cell.task, std.root, std.wave.contract_revision)
    settings = RunSettings(root=std.root, out_dir=work_dir, gateway_url=gateway_url, model=model)
    run_key = f"bare-{cell.id}-{time.monotonic_ns()}"
    ctx = BareContext(
        cell=cell,
        run_dir=work_dir / "bare",
        view=view,
        gateway=client,
        run_key=run_key,
        model_name=frameworks_model_name(settings, std.wave),
    )
    started = time.perf_counter()
    client.register_run(run_key, cell.id, cell.seed, model, None)
    run(ctx)
    client.close_run(run_key)
    elapsed = time.perf_counter() - started
    if not ctx.emitted:
        raise SystemExit("the bare graph emitted no artifact; the timing would mislead")
    return elapsed


def harness_run(std: Any, cell: Any, gateway_url: str, model: str, work_dir: Path) -> float:
    from pytest_sabot.harness.run import RunSettings, run_cell

    settings = RunSettings(root=std.root, out_dir=work_dir, gateway_url=gateway_url, model=model)
    started = time.perf_counter()
    outcome = run_cell(cell, std.wave, settings)
    elapsed = time.perf_counter() - started
    if outcome.error is not None:
        raise SystemExit(f"the harness run failed: {outcome.error}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--model", default="sim:vigilant")
    parser.add_argument("--task", default="T1")
    parser.add_argument("--config", default="guardrail", choices=["default", "guardrail"])
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--wave", type=int, default=1)
    args = parser.parse_args()

    from pytest_sabot.gateway import start_gateway
    from pytest_sabot.matrix.standard import load_standard

    std = load_standard(args.wave, ROOT)
    cell = std.cell(f"langgraph-{args.config}-baseline-{args.task}-s{args.seed}")

    started = time.perf_counter()
    import langchain_openai  # noqa: F401
    import langgraph.graph  # noqa: F401

    import_s = time.perf_counter() - started

    with tempfile.TemporaryDirectory() as tmp, start_gateway() as gateway:
        work = Path(tmp)
        first = harness_run(std, cell, gateway.url, args.model, work / "first")
        bare_run(std, cell, gateway.url, args.model, work / "warm")  # warm both paths alike
        harness = harness_run(std, cell, gateway.url, args.model, work / "harness")
        bare = bare_run(std, cell, gateway.url, args.model, work / "bare")

    print(
        json.dumps(
            {
                "cell": cell.id,
                "model": args.model,
                "import_s": round(import_s, 3),
                "first_run_s": round(first, 3),
                "harness_run_s": round(harness, 3),
                "bare_run_s": round(bare, 3),
                "ratio": round(harness / bare, 2),
            }
        )
    )


if __name__ == "__main__":
    main()
