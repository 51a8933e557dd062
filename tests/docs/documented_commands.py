"""What tests/docs/test_documented_commands.py does with each documented command.

Every command README.md and docs/*.md give in a ``bash`` block has one entry here, keyed by
the command as the page writes it (doc_commands.py reads them), so a command added to a
page without an entry, or an entry whose command left the page, fails the test. An entry
either runs, or says why it is only shown:

- ``Run``: the command runs in a scratch copy of the project (cells/, tasks/, mappings/,
  examples/), keyless, with no key in the environment, and its exit code and first line
  of output are checked. A command that would take minutes (a whole wave, the lab
  matrix) runs on a small slice instead, through the documented ``--sabot-*`` filters
  (``SMALL``), in one process (``-n 0``, see ``one_process``); a placeholder of the page
  (``<cell id>``, ``RUN``) is filled with a real value; ``prepare`` runs first what the
  page takes as already there; ``once`` runs a command whose outcome is the same on every
  page and that reads nothing an earlier command of the page wrote (the demo, a plan, a
  slice two pages both give) once per test session, for every page that gives it.
- ``Shown``: not run here, for the reason given (it installs packages, needs a paid key
  or the reader's own package, is the test suite itself, or is a benchmark); the reason
  names where it is exercised instead, when it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# The documented cell filters that cut a wave to a small slice (docs/USAGE.md, "Slices"):
# one framework, one task, one seed, the baseline and two operators.
SMALL = ("--sabot-framework=langgraph --sabot-task=T1 --sabot-seed=11 "
         "--sabot-operator=baseline,O1,O3")
TINY = "--sabot-task=T1 --sabot-seed=11"  # for a slice that already names its rows
LAB_SMALL = "--sabot-framework=langgraph --sabot-seed=11 --sabot-operator=baseline,O8"
HUNG_SMALL = "--sabot-framework=langgraph --sabot-config=default --sabot-seed=21"
CELL = "langgraph-default-baseline-T1-s11"  # a cell every small slice records
# Four baseline groups (a baseline and its fault cells run in one shard): one per shard of 4.
SHARDED = ("--sabot-framework=langgraph --sabot-task=T1,T2 --sabot-seed=11 "
           "--sabot-operator=baseline,O1")


def one_process(command: str) -> str:
    """The command with its xdist workers asked for in-process (``-n 0``, xdist's own
    spelling): a slice of a few cells runs in seconds without starting workers, and the
    workers themselves are exercised by tests/scale/."""
    return command.replace(" -n auto", " -n 0").replace(" -n 2", " -n 0")


@dataclass(frozen=True)
class Run:
    exit: int | tuple[int, ...] = 0
    first: str = ""  # a regex the first line of output must match (stdout, else stderr)
    instead: str | None = None  # the command run in the documented one's place
    why: str = ""  # why ``instead`` (a small slice, a placeholder filled)
    prepare: tuple[str, ...] = field(default=())  # run first, their exit codes unchecked
    # The same in every scratch project and independent of the page's earlier commands (the
    # demo, a slice two pages give): run once per test session; these
    # paths of what it wrote are copied into each project that runs it.
    once: tuple[str, ...] | None = None

    def command(self, documented: str) -> str:
        """What runs for the documented command: ``instead`` (in one process) or itself."""
        return one_process(self.instead) if self.instead is not None else documented


@dataclass(frozen=True)
class Shown:
    why: str


PYTEST_FIRST = r"^=+ test session starts =+$"
ROOT_LINE = ('root=$(python -c "from pytest_sabot.core.paths import standard_root; '
             'print(standard_root())")')
NEWEST = ('"$(sabot history list --json | python -c \'import json, sys; '
          'print(json.load(sys.stdin)[0][\"run_id\"])\')"')
MCP = ("an MCP stdio server that waits for its client; tests/commands/test_mcp_cell.py and "
       "tests/mcp/ drive it with the MCP SDK's own client")
MCP_READ = ("reads the directory an MCP client's sessions left; "
            "tests/commands/test_mcp_cell.py::test_I154_* runs it on one")
BENCH = "a benchmark of minutes; bench/ reports its numbers from one run"
GROWTH = (f"{BENCH}; tests/scale/test_growth_bench.py builds, rescores, indexes and renders "
          "its synthetic wave at a small size")
SUITE = "the test suite itself, of which this test is part (.ci/run runs it)"
INSTALL = "installs packages into the environment (.ci/run installs the project this way)"
LIVE = "needs a paid provider's key; tests/live/ runs it against a loopback provider"
LOCAL = ("needs a local model server; tests/own_pipelines/ runs the spec against loopback fakes "
         "shaped like Ollama, llama.cpp's server and vLLM")
SERVE = ("a web server that runs until it is stopped; tests/web/ starts the same app on a "
         "loopback port and drives it over HTTP and in Chromium")
OWN = ("runs the reader's own package; tests/trusted/ runs the same options with a callable "
       "of their own")

TABLE: dict[str, dict[str, Run | Shown]] = {
    "README.md": {
        'python3 -m venv .venv && . .venv/bin/activate && pip install -c constraints.txt -e '
        '".[dev]" && pytest --sabot-wave=1 -n auto': Shown(INSTALL),
        "pytest -n auto": Shown(SUITE),
        'pytest --sabot-wave=2 -k "crewai and O3"': Run(
            0, PYTEST_FIRST, f'pytest --sabot-wave=2 -k "crewai and O3" {TINY}',
            "one task and seed of the slice", once=("reports/wave-2",)),
        "pytest --sabot-wave=1 -m \"sabot_cell(operator='O3')\"": Run(
            0, PYTEST_FIRST,
            f"pytest --sabot-wave=1 -m \"sabot_cell(operator='O3')\" --sabot-framework=langgraph "
            f"{TINY}", "one row, task and seed of the slice"),
        "pytest --sabot-wave=1 --sabot-framework=langgraph --sabot-fail-under=0.5": Run(
            (0, 1), PYTEST_FIRST,
            f"pytest --sabot-wave=1 --sabot-framework=langgraph --sabot-fail-under=0.5 {TINY}",
            "one task and seed of the row"),
        "pytest --sabot-wave=1 -n auto --sabot-resume": Run(
            0, PYTEST_FIRST, f"pytest --sabot-wave=1 -n auto --sabot-resume {SMALL}",
            "a small slice of the wave"),
        "pytest --sabot-wave=1 --junitxml=reports/sabot.xml": Run(
            0, PYTEST_FIRST, f"pytest --sabot-wave=1 --junitxml=reports/sabot.xml {SMALL}",
            "a small slice of the wave"),
        "pytest --sabot-wave=1 -n auto --sabot-shard=2/4 --sabot-out=reports/shard-2": Run(
            0, PYTEST_FIRST,
            f"pytest --sabot-wave=1 -n auto --sabot-shard=2/4 --sabot-out=reports/shard-2 "
            f"{SHARDED}", "a shard of a small slice with four baseline groups"),
        "sabot merge reports/shard-{1,2,3,4} --out reports/wave-1-merged": Run(
            0, r"^merged 4 shard", prepare=tuple(
                f"pytest --sabot-wave=1 --sabot-shard={n}/4 --sabot-out=reports/shard-{n} "
                f"{SHARDED}" for n in (1, 3, 4))),
        "sabot demo": Run(0, r"^Sabot demo: wave 3, rules v0\.2\.1$", once=()),
        "pytest --sabot-wave=lab -n auto": Run(
            0, PYTEST_FIRST, f"pytest --sabot-wave=lab -n auto {LAB_SMALL}",
            "a small slice of the lab matrix", once=()),
        "pytest --sabot-wave=hung-tool -n auto": Run(
            0, PYTEST_FIRST, f"pytest --sabot-wave=hung-tool -n auto {HUNG_SMALL}",
            "one held cell of the hung-tool matrix and its baseline", once=()),
        "sabot lab run lost-create-response --agent builtin:naive --out runs/naive": Run(1, ""),
        "sabot compare runs/naive/run.json runs/res/run.json": Run(
            0, r"^lab runs compared \(A -> B\): lost-create-response$",
            prepare=("sabot lab run lost-create-response --agent builtin:resilient --out "
                     "runs/res",)),
        "sabot inspect runs/naive": Run(0, r"^lab run lost-create-response--builtin-naive"),
        "PYTHONPATH=examples/lab-adapter:$PYTHONPATH sabot lab campaign "
        "campaigns/offline.yaml --out runs/campaign --trust-local-agent": Run(
            1, r"^campaign offline: 18 of 18 trials recorded \(complete\)"),
        "sabot compare reports/wave-1 reports/wave-2": Run(
            0, r"^Sabot paired comparison \(hard tier, B - A"),
        "sabot history": Run(0, r"^Sabot run history: "),
        "sabot regress RUN_A RUN_B": Run(
            (0, 3), "", "sabot regress reports/wave-1 reports/wave-1-merged",
            "RUN_A and RUN_B filled with two runs of one registration"),
        "sabot replay reports/live/cells/<cell id>": Run(
            0, "", f"sabot replay reports/wave-1/cells/{CELL}",
            "a keyless cell (replay verifies those too, docs/HISTORY.md); no live run here"),
        "sabot inspect reports/wave-1/cells/<cell id>": Run(
            0, "", f"sabot inspect reports/wave-1/cells/{CELL}", "<cell id> filled"),
        "sabot export RUN --format junit": Run(
            0, r"^<\?xml", "sabot export reports/wave-1 --format junit", "RUN filled"),
        "sabot serve": Shown(SERVE),
        "pytest --sabot-wave=1 --sabot-agent mypkg.agent:run --trust-local-agent": Shown(OWN),
        "pytest --sabot-wave=1 --sabot-agent mypkg.agent:run --trust-local-agent "
        "--sabot-sandbox": Shown(
            OWN + "; tests/trusted/test_sandbox.py and test_hostile_agent.py run a trusted "
            "agent in the sandbox"),
        "sabot mcp O3-T1-s11 --out reports/mcp": Shown(
            "an MCP stdio server that waits for its client; tests/commands/test_mcp_cell.py "
            "drives it with the MCP SDK's own client"),
        "sabot rescore reports/wave-1 --rules v0.2.1": Run(
            0, r"^both readings: v0\.1\.3 \(as recorded\) and v0\.2\.1 \(rescored\)$"),
        "sabot report reports/wave-1": Run(
            0, r"^Sabot scoreboard: wave 1, rules v0\.1\.3( \[partial board: .*\])?$"),
        "sabot validate": Run(0, r"^wave 1: ok \(1050 cells, rules v0\.1\.3\)$", once=()),
        "sabot plan --sabot-wave 2 --sabot-model openai:gpt-5.6-terra": Run(
            0, r"^plan for model openai:gpt-5\.6-terra \(built-in estimates\); cap \$500\.00$"),
        'pytest -m "not slow" -n 2': Shown(SUITE),
        "ruff check . && mypy && lint-imports": Shown("the style, type and layer checks .ci/run "
                                                      "runs before the suite"),
    },
    "docs/ADAPTERS.md": {
        "pip install ./examples/sabot-adapter-mygraph": Run(
            0, "", "python -m pip install --quiet --no-deps --no-build-isolation --no-index "
            "--disable-pip-version-check --target site ./examples/sabot-adapter-mygraph",
            "into the scratch project's site/ (on its PYTHONPATH), never into the environment "
            "running the suite"),
        ROOT_LINE: Run(0, ""),
        'mkdir my-root && cp -r "$root/cells" "$root/tasks" "$root/mappings" my-root/': Run(
            0, "", f'{ROOT_LINE} && mkdir my-root && cp -r "$root/cells" "$root/tasks" '
            '"$root/mappings" my-root/', "the variable of the line above, in the same shell"),
        "cp examples/sabot-adapter-mygraph/matrix/mygraph.yaml my-root/cells/": Run(0, ""),
        "cp examples/sabot-adapter-mygraph/matrix/seeds/mygraph.json my-root/cells/seeds/": Run(
            0, ""),
        "sabot validate my-root": Run(0, r"^wave 1: ok \(1050 cells"),
        "pytest --sabot-wave=mygraph --sabot-root=my-root --sabot-task=T1 --sabot-seed=11": Run(
            0, PYTEST_FIRST),
        "pytest --sabot-wave=mygraph --sabot-root=my-root --sabot-timeout=60": Run(
            0, PYTEST_FIRST,
            f"pytest --sabot-wave=mygraph --sabot-root=my-root --sabot-timeout=60 {TINY}",
            "one task and seed of the row"),
        "pytest --sabot-wave=mygraph --sabot-root=my-root -n auto": Run(
            0, PYTEST_FIRST, f"pytest --sabot-wave=mygraph --sabot-root=my-root -n auto {TINY}",
            "one task and seed of the row"),
        "pytest --sabot-wave=mygraph --sabot-root=my-root --sabot-model=sim:vigilant": Run(
            0, PYTEST_FIRST,
            f"pytest --sabot-wave=mygraph --sabot-root=my-root --sabot-model=sim:vigilant {TINY}",
            "one task and seed of the row"),
        "sabot plan --sabot-wave mygraph --sabot-root my-root --sabot-model openai:gpt-5.6-terra":
            Run(0, r"^plan for model openai:gpt-5\.6-terra"),
        "OPENAI_API_KEY=... pytest --sabot-wave=mygraph --sabot-root=my-root "
        "--sabot-model=openai:gpt-5.6-terra --sabot-budget-usd=20": Shown(LIVE),
        "pytest --sabot-wave=3 --sabot-agent mypkg.agent:run --trust-local-agent "
        "--sabot-out reports/mine": Shown(OWN),
        "sabot mcp baseline-T1-s11 --out runs/mine": Shown(MCP),
        "sabot mcp O3-T1-s11 --out runs/mine": Shown(MCP),
        "sabot mcp lost-create-response --out runs/lab": Shown(MCP),
        "sabot rescore runs/mine": Shown(MCP_READ),
        "sabot inspect runs/mine/cells/mcp_client-default-O3-T1-s11": Shown(MCP_READ),
        "sabot export runs/mine --format junit --out mine.xml": Shown(MCP_READ),
        "pip install 'pytest-sabot[langgraph]'": Shown(INSTALL),
        "pip install 'pytest-sabot[crewai]'": Shown(INSTALL),
        "pip install 'pytest-sabot[autogen]'": Shown(INSTALL),
        "pip install 'pytest-sabot[agent-framework]'": Shown(INSTALL),
        "pip install 'pytest-sabot[all]'": Shown(INSTALL),
    },
    "docs/HISTORY.md": {
        "sabot history [--history FILE] [list [--limit N] [--json]]": Run(
            0, r"^Sabot run history: reports/history\.sqlite \(1 run",
            "sabot history --history reports/history.sqlite list --limit 5",
            "the synopsis with its options filled", prepare=(f"pytest --sabot-wave=1 {SMALL}",)),
        "sabot history show RUN [--json]": Run(
            0, r"^run \d{8}T\d{6}Z-[0-9a-f]{6}", f"sabot history show {NEWEST}",
            "RUN filled with the newest run id"),
        "sabot history index DIR... [--json]": Run(
            0, r"^indexed 1 output directory into", "sabot history index reports",
            "DIR filled"),
        "sabot history resolve RUN": Run(
            0, r"/reports/wave-1$", f"sabot history resolve {NEWEST}", "RUN filled"),
        "sabot regress A B [--json] [--min-paired N] [--resamples N] [--seed S]": Run(
            (0, 3), "", "sabot regress reports/wave-1 reports/wave-1 --resamples 200",
            "A and B filled (a run against itself)"),
        "sabot compare A B [--json]": Run(
            0, r"^Sabot paired comparison", "sabot compare reports/wave-1 reports/wave-1",
            "A and B filled"),
        "sabot export RUN --format html|json|junit [--out FILE]": Run(
            0, "", "sabot export reports/wave-1 --format html --out export.html",
            "RUN, the format and FILE filled"),
    },
    "docs/LAB.md": {
        "python -m pytest_sabot.lab demo": Run(0, ""),
        "python -m pytest_sabot.lab run lost-create-response --agent builtin:naive --out "
        "runs/naive": Run(1, ""),
        "python -m pytest_sabot.lab run lost-create-response --agent builtin:resilient --out "
        "runs/res": Run(0, ""),
        "python -m pytest_sabot.lab replay runs/naive": Run(0, ""),
        "python -m pytest_sabot.lab compare runs/naive/run.json runs/res/run.json": Run(
            0, r"^lab runs compared \(A -> B\)"),
        "python -m pytest_sabot.lab demo --out runs/demo": Run(0, ""),
        "sabot inspect runs/naive": Run(0, r"^lab run lost-create-response--builtin-naive"),
        "sabot export runs/naive --format junit": Run(0, r"^<\?xml"),
        "sabot compare runs/naive/run.json runs/res/run.json": Run(
            0, r"^lab runs compared \(A -> B\)"),
        "python -m pytest_sabot.lab evaluate runs/naive/run.json": Run(1, ""),
        "python -m pytest_sabot.lab view lost-create-response": Run(0, ""),
        "python -m pytest_sabot.lab init my-scenarios": Run(0, ""),
        "python -m pytest_sabot.lab validate my-scenarios/my-scenario.yaml": Run(0, ""),
        "python -m pytest_sabot.lab run lost-create-response --agent mypkg.agent:run "
        "--trust-local-agent --out runs/mine": Shown(OWN),
        "python -m pytest_sabot.lab mcp lost-create-response --out runs/mcp": Shown(MCP),
        "sabot lab run lost-create-response --agent openai:gpt-5.6-luna --live --out runs/live":
            Shown("needs a paid key; tests/lab/test_lab_live_agent.py drives the same command "
                  "against a loopback provider"),
        "PYTHONPATH=examples/lab-adapter:$PYTHONPATH sabot lab campaign "
        "campaigns/offline.yaml --out runs/campaign --trust-local-agent": Run(
            1, r"^campaign offline: 18 of 18 trials recorded \(complete\)"),
        "pytest --sabot-wave=lab -n auto": Run(
            0, PYTEST_FIRST, f"pytest --sabot-wave=lab -n auto {LAB_SMALL}",
            "a small slice of the lab matrix", once=()),
        "pytest --sabot-wave=hung-tool -n auto": Run(
            0, PYTEST_FIRST, f"pytest --sabot-wave=hung-tool -n auto {HUNG_SMALL}",
            "one held cell of the hung-tool matrix and its baseline", once=()),
        'pytest --sabot-wave=lab -k "O8 and crewai"': Run(
            0, PYTEST_FIRST, 'pytest --sabot-wave=lab -k "O8 and crewai" --sabot-seed=11',
            "one seed of the slice"),
    },
    "docs/LIVE.md": {
        "ollama pull qwen2.5:7b": Shown(LOCAL),
        "pytest --sabot-wave=3 --sabot-model=local:qwen2.5:7b@http://127.0.0.1:11434/v1 -n 2":
            Shown(LOCAL),
        "llama-server -m qwen2.5-7b-instruct-q4_k_m.gguf --port 8080 --jinja": Shown(LOCAL),
        "pytest --sabot-wave=3 --sabot-model=local:qwen2.5-7b@http://127.0.0.1:8080/v1 -n 2":
            Shown(LOCAL),
        "vllm serve Qwen/Qwen2.5-7B-Instruct --port 8000 --enable-auto-tool-choice "
        "--tool-call-parser hermes": Shown(LOCAL),
        "pytest --sabot-wave=3 "
        "--sabot-model=local:Qwen/Qwen2.5-7B-Instruct@http://127.0.0.1:8000/v1 -n 2":
            Shown(LOCAL),
        "sabot plan --sabot-wave 3 --sabot-model openai:gpt-5.6-terra": Run(
            0, r"^plan for model openai:gpt-5\.6-terra \(built-in estimates\)", once=()),
        "export OPENAI_API_KEY=...": Shown(LIVE),
        "pytest --sabot-wave=3 --sabot-model=openai:gpt-5.6-terra -n 4": Shown(LIVE),
        "OPENAI_API_KEY=... python -m pytest_sabot.gateway --allow-live --spend-ledger reports":
            Shown("a live gateway; tests/live/test_live_security.py starts it against a "
                  "loopback provider"),
        "http://127.0.0.1:40129/Xq3...": Shown("the gateway's output shown in the block, not a "
                                               "command"),
        "pytest --sabot-wave=3 --sabot-model=openai:gpt-5.6-terra "
        "--sabot-gateway-url=http://127.0.0.1:40129/Xq3...": Shown(LIVE),
        "pytest --sabot-wave=3 --sabot-model=replay:reports/wave-3/recordings "
        "--sabot-out=reports/replayed": Shown(
            "serves a live run's recordings; tests/live/test_live_replay.py records them from "
            "a loopback provider and runs this"),
    },
    "docs/MAPPINGS.md": {
        "mkdir myroot && cp -r cells tasks mappings myroot/": Run(0, ""),
        "sabot validate myroot": Run(0, r"^wave 1: ok \(1050 cells"),
        "sabot demo --out reports/demo": Run(0, r"^Sabot demo: wave 3, rules v0\.2\.1$",
                                             once=("reports/demo",)),
        "sabot rescore reports/demo/vigilant --rules v0.2.2 --sabot-root myroot": Shown(
            "needs the hand edits of steps 2 and 3 to myroot/mappings/ first"),
        "pip install 'pytest-sabot[agent-framework]'": Shown(INSTALL),
        "pytest --sabot-wave=agent-framework -n auto": Run(
            0, PYTEST_FIRST, f"pytest --sabot-wave=agent-framework -n auto {TINY} "
            "--sabot-operator=baseline,O1", "one task, seed and operator of the matrix"),
    },
    "docs/REPORT.md": {
        "python -m pytest_sabot.report.html reports/wave-1": Run(
            0, r"reports/wave-1/report\.html$", prepare=(f"pytest --sabot-wave=1 {SMALL}",)),
        "python -m pytest_sabot.report.html reports/wave-1 --out /tmp/w1.html --layout pages":
            Run(0, r"w1\.html$",
                "python -m pytest_sabot.report.html reports/wave-1 --out w1.html --layout pages",
                "written in the scratch project rather than /tmp"),
        "python -m pytest_sabot.report.html reports/wave-1 reports/wave-2": Run(
            0, r"reports/wave-2/compare\.html$", prepare=(f"pytest --sabot-wave=2 {SMALL}",)),
        "python -m pytest_sabot.report.html lab-out/run.json": Run(
            0, r"lab-out/report\.html$", prepare=(
                "sabot lab run lost-create-response --agent builtin:naive --out lab-out",)),
        "apt-get update && apt-get install -y --no-install-recommends chromium": Shown(
            "installs a system package (.ci/run installs it when it is missing)"),
    },
    "docs/SCALING.md": {
        "pytest --sabot-wave=1 -n 2": Run(0, PYTEST_FIRST, f"pytest --sabot-wave=1 -n 2 {SMALL}",
                                          "a small slice of the wave"),
        "pytest --sabot-wave=1 --tx popen//chdir=/scratch/a --tx popen//chdir=/scratch/b "
        "--dist load": Run(
            0, PYTEST_FIRST,
            "mkdir -p scratch/a scratch/b && pytest --sabot-wave=1 --tx popen//chdir=scratch/a "
            f"--tx popen//chdir=scratch/b --dist load {SMALL}",
            "scratch directories inside the project, and a small slice"),
        "pytest --sabot-wave=1 --tx socket=127.0.0.1:8888 --tx popen --dist load": Shown(
            "needs an execnet socket server on port 8888; tests/scale/test_remote_workers.py "
            "starts one and runs the session"),
        "pytest --sabot-wave=1 --sabot-shard=1/2 --sabot-out=reports/shard-1": Run(
            0, PYTEST_FIRST,
            f"pytest --sabot-wave=1 --sabot-shard=1/2 --sabot-out=reports/shard-1 {SMALL}",
            "a shard of a small slice"),
        "pytest --sabot-wave=1 --sabot-shard=2/2 --sabot-out=reports/shard-2": Run(
            0, PYTEST_FIRST,
            f"pytest --sabot-wave=1 --sabot-shard=2/2 --sabot-out=reports/shard-2 {SMALL}",
            "a shard of a small slice"),
        "sabot merge reports/shard-1 reports/shard-2 --out reports/wave-1-merged": Run(
            0, r"^merged 2 shard"),
        "pytest --sabot-wave=1 -n 2 --sabot-model=openai:gpt-5.6-terra": Shown(LIVE),
        "pytest --sabot-wave=1 -n 2 --sabot-sim-latency=1s --sabot-max-connections=16": Run(
            0, PYTEST_FIRST,
            f"pytest --sabot-wave=1 -n 2 --sabot-sim-latency=50ms --sabot-max-connections=16 "
            f"{SMALL}", "a small slice, the model answering in 50 ms"),
        "pytest --sabot-wave=1 -n 2 --sabot-concurrency=8 --sabot-model=openai:my-model "
        "--sabot-base-url=http://127.0.0.1:8000/v1": Shown(
            "needs a model server of your own on port 8000; tests/live/ runs live sessions, "
            "several cells in flight, against a loopback provider"),
        "python bench/live_shaped.py --vs-sequential": Shown(BENCH),
        "python bench/live_shaped.py --keep /tmp/slice": Shown(BENCH),
        "python bench/live_schedule.py /tmp/slice/out": Shown(BENCH),
        "python bench/wave_scale.py": Shown(BENCH),
        "python bench/wave_profile.py --run -- --sabot-wave=1 -n 2 --sabot-out=/tmp/profiled":
            Shown(BENCH),
        "python bench/wave_profile.py --raw wave-profile.raw": Shown(BENCH),
        "python bench/adaptive_rate.py": Shown(BENCH),
        "python bench/adaptive_rate.py --budget-usd 0.02": Shown(BENCH),
        "python bench/startup_reuse.py --before /path/to/an/older/checkout": Shown(BENCH),
        "python bench/growth.py": Shown(GROWTH),
        "python bench/growth.py --source reports/wave-1 --keep": Shown(GROWTH),
    },
    "docs/SERVE.md": {
        "sabot serve": Shown(SERVE),
    },
    "docs/TRUSTED_AGENTS.md": {
        "PYTHONPATH=examples/lab-adapter:$PYTHONPATH python -m pytest_sabot.lab run "
        "lost-create-response --agent customer_lookup:run --trust-local-agent --out "
        "runs/lookup": Run(1, r"^run lost-create-response--customer_lookup-run--s"),
        "python -m pytest_sabot.lab run lost-create-response --agent mypkg.agent:run "
        "--trust-local-agent --out runs/mine": Shown(OWN),
        "python -m pytest_sabot.lab replay runs/mine": Shown(OWN),
        "pytest --sabot-wave=3 --sabot-agent mypkg.agent:run --trust-local-agent "
        "--sabot-sandbox": Shown(
            OWN + "; tests/trusted/test_sandbox.py and test_hostile_agent.py run a trusted "
            "agent in the sandbox"),
        "pytest --sabot-wave=3 --sabot-agent mypkg.agent:run --trust-local-agent "
        "--sabot-out reports/mine -n auto": Shown(OWN),
        "pytest --sabot-wave=3 --sabot-agent mypkg.agent:run --trust-local-agent     "
        "--sabot-agent-row my_pipeline --sabot-agent-mapping my_pipeline.yaml "
        "--sabot-agent-env MY_SERVICE_TOKEN --sabot-out reports/mine": Shown(
            OWN + "; tests/trusted/test_agent_row.py runs the three options together"),
    },
    "docs/USAGE.md": {
        "pytest --sabot-wave=3 -n auto": Run(0, PYTEST_FIRST, f"pytest --sabot-wave=3 -n auto "
                                             f"{SMALL}", "a small slice of the wave"),
        "pytest --sabot-wave=3 --sabot-framework=langgraph --sabot-task=T1 --sabot-seed=11 -v":
            Run(0, PYTEST_FIRST),
        'pytest --sabot-wave=2 -k "crewai and O3"': Run(
            0, PYTEST_FIRST, f'pytest --sabot-wave=2 -k "crewai and O3" {TINY}',
            "one task and seed of the slice", once=("reports/wave-2",)),
        "pytest --sabot-wave=1 -m \"sabot_cell(operator='O3')\"": Run(
            0, PYTEST_FIRST,
            f"pytest --sabot-wave=1 -m \"sabot_cell(operator='O3')\" --sabot-framework=langgraph "
            f"{TINY}", "one row, task and seed of the slice"),
        'pytest --sabot-wave=1 "::test_cell[langgraph-default-O1-T1-s11]"': Run(0, PYTEST_FIRST),
        'pytest --sabot-wave=1 --sabot-rules=v0.2.1 -k "autogen and guardrail and O1 and T2 and '
        's12"': Run(0, PYTEST_FIRST),
        "pytest --sabot-wave=3 -n auto --sabot-resume": Run(
            0, PYTEST_FIRST, f"pytest --sabot-wave=3 -n auto --sabot-resume {SMALL}",
            "a small slice of the wave"),
        "pytest --sabot-wave=3 -n auto --sabot-resume --sabot-rerun-errors": Run(
            0, PYTEST_FIRST,
            f"pytest --sabot-wave=3 -n auto --sabot-resume --sabot-rerun-errors {SMALL}",
            "a small slice of the wave"),
        "pytest --sabot-wave=3 --sabot-framework=langgraph --sabot-fail-under=0.7": Run(
            (0, 1), PYTEST_FIRST,
            f"pytest --sabot-wave=3 --sabot-framework=langgraph --sabot-fail-under=0.7 {TINY}",
            "one task and seed of the row"),
        "pytest --sabot-wave=3 --junitxml=reports/sabot.xml": Run(
            0, PYTEST_FIRST, f"pytest --sabot-wave=3 --junitxml=reports/sabot.xml {SMALL}",
            "a small slice of the wave"),
        'pip install -c constraints.txt -e ".[dev]"': Shown(INSTALL),
        "pytest --sabot-wave=3 --sabot-framework=langgraph -n auto --sabot-fail-under=0.5 "
        "--junitxml=reports/sabot-langgraph.xml --sabot-out=reports/wave-3-langgraph": Run(
            (0, 1), PYTEST_FIRST,
            "pytest --sabot-wave=3 --sabot-framework=langgraph -n auto --sabot-fail-under=0.5 "
            f"--junitxml=reports/sabot-langgraph.xml --sabot-out=reports/wave-3-langgraph {TINY}",
            "one task and seed of the row"),
        "sabot report reports/wave-3-langgraph": Run(0, r"^Sabot scoreboard: wave 3"),
        "sabot rescore reports/wave-3": Run(
            0, r"^rescored \d+ cells under v0\.2\.1: identical to results\.json$"),
        "sabot rescore reports/wave-3 --rules v0.2.0": Run(
            0, r"^both readings: v0\.2\.1 \(as recorded\) and v0\.2\.0 \(rescored\)$"),
        "sabot report reports/wave-3": Run(
            0, r"^Sabot scoreboard: wave 3, rules v0\.2\.1( \[partial board: .*\])?$"),
        "sabot validate": Run(0, r"^wave 1: ok \(1050 cells, rules v0\.1\.3\)$", once=()),
        "sabot plan --sabot-wave 3 --sabot-model openai:gpt-5.6-terra": Run(
            0, r"^plan for model openai:gpt-5\.6-terra \(built-in estimates\)", once=()),
        "sabot schema schemas/": Run(0, ""),
        "sabot compare reports/wave-2 reports/wave-3": Run(0, r"^Sabot paired comparison"),
        "sabot demo --out reports/demo": Run(0, r"^Sabot demo: wave 3, rules v0\.2\.1$",
                                             once=("reports/demo",)),
        "sabot --version": Run(0, r"^pytest-sabot \d+\.\d+\.\d+$"),
        "sabot compare reports/demo/credulous reports/demo/vigilant": Run(
            0, r"^Sabot paired comparison"),
        'pytest tests/test_my_cell.py --sabot-wave=3 -m "not sabot_cell"': Shown(
            "runs the page's own test file; tests/cli/test_usage_example.py writes it and runs "
            "this command"),
    },
}
