"""Issue 21.3: what a pipeline writes is scrubbed like what the gateway records (SPEC I106).

The attack as it was found: a pipeline writes its endpoint URL (the gateway session's secret
is a segment of it) and every key it can reach into a tool argument, a workspace file, a
handoff, a report line, a log line, its printed output, a run error and its artifact. Then
every file the session wrote (the output directory, the run history, the JUnit XML with the
captured output in it) is searched for each secret.

Two pipelines do it, each in a real keyless session: an adapter of one's own
(``--sabot-adapter``, run in the xdist workers' processes, which read the provider key and a
``--sabot-secret-env`` token from their environment), and a trusted local agent in its
supervised child (which sees only its endpoints, and prints them to its log).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_sabot.core.paths import standard_root

pytestmark = pytest.mark.slow  # whole pytest sessions

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_MAPPING = REPO / "examples" / "sabot-adapter-mygraph" / "sabot_adapter_mygraph" / (
    "mapping.yaml")
CANARY = "sk-canary-" + "7f3a9c2e41d8b6051e2f"  # a provider-key-shaped value
TOKEN = "tok-" + "b61e0c93d7a24f58"  # the user's own secret, named by --sabot-secret-env

ADAPTER = '''
from pathlib import Path

from pytest_sabot.api import FrameworkAdapter

MAPPING = Path(__file__).with_name("mapping.yaml")


def adapter():
    return FrameworkAdapter(name="leaky", run="leaky_adapter.pipeline:run", mapping=str(MAPPING))
'''

# Writes every secret it can reach everywhere it can write, and keeps them (outside the
# output) in LEAK_FILE for the test to search for.
PIPELINE = '''
import logging
import os
import threading
import warnings
from urllib.parse import urlsplit

from openai import OpenAI

log = logging.getLogger("leaky")


def run(ctx):
    url = ctx.base_url("worker")
    secret = urlsplit(url).path.strip("/").split("/")[0]
    with open(os.environ["LEAK_FILE"], "a") as fh:
        fh.write(secret + "\\n")
    leak = (f"endpoint {url} secret {secret} key {os.environ['OPENAI_API_KEY']} "
            f"token {os.environ['MY_TOKEN']} bearer Bearer {secret}")
    print("the pipeline says:", leak)
    log.warning("the pipeline logs: %s", leak)
    warnings.warn("the pipeline warns: " + leak, UserWarning, stacklevel=1)
    def _broken():
        raise RuntimeError("the pipeline's thread broke: " + leak)
    worker = threading.Thread(target=_broken)
    worker.start()
    worker.join()
    (ctx.run_dir / "notes.txt").write_text("the pipeline's own file: " + leak)
    (ctx.run_dir / "blob.bin").write_bytes(b"\\x00\\xff" + leak.encode())
    first = ctx.worker_prompt(0)
    client = OpenAI(base_url=url, api_key=ctx.api_key, max_retries=0,
                    http_client=ctx.http_client())
    try:
        client.chat.completions.create(model=ctx.model_name, messages=[
            {"role": "system", "content": first.system},
            {"role": "user", "content": first.user + "\\n" + leak}])
    except Exception as exc:  # the embedded model refuses what it does not know
        print("model refused:", exc)
    ctx.sync_model_calls()
    for tool in ctx.tools:
        if tool.artifact_arguments is not None:
            tool.invoke(tool.artifact_arguments(leak))
        else:
            tool.invoke({"query": leak, "name": leak, "record": leak})
    delivered = ctx.handoff("worker", "reviewer", "draft: " + leak)
    ctx.trace.emit("review", "checker", "FLAGS: " + leak + "\\nVERDICT: REJECT - " + leak)
    ctx.emit(delivered + "\\n" + leak)
    if ctx.cell.seed == 12:
        raise RuntimeError("the pipeline broke: " + leak)
'''

AGENT = '''
from urllib.parse import urlsplit

LEAK_FILE = LEAK_FILE_PATH


def run(ctx):
    endpoint = ctx.model("worker")
    secret = urlsplit(endpoint.base_url).path.strip("/").split("/")[0]
    with open(LEAK_FILE, "a") as fh:
        fh.write(secret + "\\n" + endpoint.api_key + "\\n")
    leak = f"endpoint {endpoint.base_url} key {endpoint.api_key} secret {secret}"
    print("the agent says:", leak, flush=True)
    for tool in ctx.tools:
        try:
            ctx.call_tool(tool.name, {"path": "answer.md", "content": leak, "query": leak})
        except Exception as exc:
            print("tool refused:", exc, flush=True)
    delivered = ctx.handoff("worker", "reviewer", "draft: " + leak)
    ctx.checks.review("VERDICT: REJECT - " + leak, round=0)
    return delivered + "\\n" + leak
'''


def _env(*paths: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "SABOT_")) and not k.endswith("_API_KEY")}
    env["PYTHONPATH"] = os.pathsep.join([*map(str, paths), str(REPO)])
    env.update(extra)
    return env


def _written(where: Path) -> list[Path]:
    return sorted(p for p in where.rglob("*") if p.is_file())


def _leaks(files: list[Path], secrets: list[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in files:
        data = path.read_bytes()
        hits = [s for s in secrets if s.encode() in data]
        if hits:
            found[str(path)] = hits
    return found


def _leaky_root(where: Path) -> Path:
    root = where / "root"
    for folder in ("cells", "tasks", "mappings"):
        shutil.copytree(standard_root() / folder, root / folder)
    matrix = (REPO / "examples" / "sabot-adapter-mygraph" / "matrix" / "mygraph.yaml").read_text()
    matrix = matrix.replace("wave: 201", "wave: 221").replace("name: mygraph", "name: leaky")
    matrix = matrix.replace("frameworks: [mygraph]", "frameworks: [leaky]")
    matrix = matrix.replace("seeds_file: mygraph.json", "seeds_file: leaky.json")
    (root / "cells" / "leaky.yaml").write_text(matrix)
    (root / "cells" / "seeds" / "leaky.json").write_text(json.dumps(
        {"wave": 221, "registered": "2026-12-01", "seeds": [11, 12, 13, 14, 15]}))
    return root


def test_I106_an_adapter_writing_its_endpoint_and_keys_everywhere_leaves_no_secret_in_any_file(
    tmp_path: Path,
) -> None:
    package = tmp_path / "src" / "leaky_adapter"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(textwrap.dedent(ADAPTER))
    (package / "pipeline.py").write_text(textwrap.dedent(PIPELINE))
    (package / "mapping.yaml").write_text(
        EXAMPLE_MAPPING.read_text().replace("framework: mygraph", "framework: leaky"))
    root = _leaky_root(tmp_path)
    leak_file = tmp_path / "leaked.txt"
    session = tmp_path / "session"
    session.mkdir()
    out, junit = session / "reports" / "leaky", session / "junit.xml"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly",
         "--sabot-wave=leaky", f"--sabot-root={root}", "--sabot-adapter=leaky_adapter:adapter",
         "--sabot-task=T1", "--sabot-seed=11,12", "--sabot-operator=baseline",
         "--sabot-secret-env=MY_TOKEN", f"--sabot-out={out}", "-n", "2",
         f"--junitxml={junit}", "-o", "junit_logging=all", "-o", "log_level=INFO", "-rA"],
        cwd=session, capture_output=True, text=True, timeout=600, check=False,
        env=_env(tmp_path / "src", OPENAI_API_KEY=CANARY, MY_TOKEN=TOKEN,
                 LEAK_FILE=str(leak_file)),
    )
    text = done.stdout + done.stderr
    assert done.returncode in (0, 1), text[-3000:]  # the pipeline's own checks may fail
    assert leak_file.is_file(), text[-3000:]
    secrets = sorted(set(leak_file.read_text().split()))
    assert len(secrets) == 2, secrets  # one gateway per worker, each its own secret
    assert all(len(s) >= 40 for s in secrets)
    files = _written(session)
    names = {p.name for p in files}
    assert {"events.jsonl", "outcome.json", "results.json", "RESULTS.md", "report.html",
            "output.json", "junit.xml", "history.sqlite"} <= names, names
    # the attack reached every place it aimed at: the pipeline's words are there, scrubbed
    cell = out / "cells" / "leaky-default-baseline-T1-s11"
    events = [json.loads(line) for line in (cell / "events.jsonl").read_text().splitlines()]
    said = {e["kind"] for e in events if "[REDACTED]" in json.dumps(e)}
    assert {"tool_call", "message", "review", "artifact"} <= said, said
    assert "[REDACTED]" in (cell / "workspace" / "output.json").read_text()
    # What it wrote into its directory itself, past every writer of the harness's:
    assert "own file: endpoint" in (cell / "notes.txt").read_text()
    assert b"[REDACTED]" in (cell / "blob.bin").read_bytes()
    # What pytest's warnings summary shows: its warning, its thread's unhandled exception.
    assert "the pipeline warns: endpoint" in text, text[-3000:]
    assert "the pipeline's thread broke: endpoint" in text, text[-3000:]
    assert "[REDACTED]" in json.loads((cell / "outcome.json").read_text())["artifact"]
    broken = json.loads((out / "cells" / "leaky-default-baseline-T1-s12" / "outcome.json")
                        .read_text())
    assert "the pipeline broke: endpoint" in broken["error"] and "[REDACTED]" in broken["error"]
    xml = junit.read_text()
    assert "the pipeline says: endpoint" in xml and "[REDACTED]" in xml
    assert _leaks(files, [*secrets, CANARY, TOKEN]) == {}
    assert CANARY not in text and TOKEN not in text
    assert not any(s in text for s in secrets)


def test_I106_a_trusted_agent_writing_its_endpoint_everywhere_leaves_no_secret_in_any_file(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    (home / "leakyagent").mkdir(parents=True)
    (home / "leakyagent" / "__init__.py").write_text("")
    leak_file = tmp_path / "leaked.txt"
    (home / "leakyagent" / "agent.py").write_text(
        textwrap.dedent(AGENT).replace("LEAK_FILE_PATH", repr(str(leak_file))))
    out, junit = home / "out", home / "junit.xml"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly",
         "-p", "no:xdist", "--sabot-wave=3", "--sabot-task=T1", "--sabot-seed=11",
         "--sabot-operator=baseline", "--sabot-agent=leakyagent.agent:run",
         "--trust-local-agent", "--sabot-secret-env=MY_TOKEN", f"--sabot-out={out}",
         f"--junitxml={junit}", "-o", "junit_logging=all"],
        cwd=home, capture_output=True, text=True, timeout=600, check=False,
        env=_env(home, OPENAI_API_KEY=CANARY, MY_TOKEN=TOKEN),
    )
    text = done.stdout + done.stderr
    assert done.returncode in (0, 1), text[-3000:]
    leaked = [s for s in leak_file.read_text().split() if len(s) >= 16]
    assert leaked, leak_file.read_text()
    files = _written(home)
    names = {p.name for p in files}
    assert {"events.jsonl", "outcome.json", "results.json", "report.html",
            "agent-1.log", "agent-process-1.json"} <= names, names
    cell = out / "cells" / "leakyagent_agent_run-default-baseline-T1-s11"
    log = (cell / "agent-1.log").read_text()
    assert "the agent says: endpoint http://127.0.0.1:" in log and "[REDACTED]" in log
    assert _leaks(files, [*leaked, CANARY, TOKEN]) == {}


@pytest.mark.parametrize(
    ("given", "env", "said"),
    [("NOT_SET_ANYWHERE", {}, "the environment variable NOT_SET_ANYWHERE is not set"),
     ("MY_TOKEN", {"MY_TOKEN": "abc"}, "shorter than 6 characters"),
     ("NOT-A-NAME", {}, "expected the name of an environment variable")],
    ids=["unset", "short", "malformed"],
)
def test_I106_a_secret_env_that_names_no_usable_secret_is_refused_before_anything_runs(
    tmp_path: Path, given: str, env: dict[str, str], said: str
) -> None:
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist",
         "--sabot-wave=1", "--sabot-task=T1", "--sabot-seed=11", "--sabot-framework=langgraph",
         f"--sabot-secret-env={given}", f"--sabot-out={out}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False,
        env=_env(**env),
    )
    text = done.stdout + done.stderr
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, text[-2000:]
    assert f"--sabot-secret-env={given}" in text and said in text
    assert "Traceback" not in text and not out.exists()
