"""Benchmark: where a keyless wave's CPU goes, from a sampling profile of every process.

    python bench/wave_profile.py --run -- --sabot-wave=1 -n 2     # profile a session, then sum
    python bench/wave_profile.py --raw wave.raw                   # sum a profile taken before

``--run`` starts the pytest session under py-spy (``pip install py-spy``; it samples the
controller, its workers and their children without changing what they run) and writes its
raw stacks beside the printed summary. Each sample is put in one bucket, by the innermost
frame that belongs to a known owner:

* ``framework``: LangGraph / LangChain, CrewAI, AutoGen and the OpenAI SDK they call;
* ``sim``: the embedded model (``pytest_sabot/sim``);
* ``gateway``: the model gateway, server and client (``pytest_sabot/gateway``);
* ``harness``: the rest of ``pytest_sabot`` (trace writing, scoring, records, locks);
* ``pytest``: pytest, pluggy, xdist, execnet;
* ``import``: any sample taken while a module is being imported (a fixed cost per process);
* ``other``: none of these (the standard library with no owner above it).

Library frames (json, pydantic, pathlib, httpx...) count for the owner that called them, and
are listed beside it. Samples of a thread waiting (a select, a socket read, a queue, a lock,
a sleep) are set apart as ``idle``: py-spy's own idle detection misses some of them. Shares
are of the non-idle samples, per process role (controller, worker, child process). An order
of magnitude from one machine, never a gate.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

FRAMEWORKS = ("langgraph/", "langchain", "crewai/", "autogen", "litellm/", "openai/",
              "langsmith/", "instructor/", "tiktoken/")
PYTEST = ("_pytest/", "pluggy/", "xdist/", "execnet/", "pytest_timeout")
IDLE = ("selectors.py", "SocketIO.readinto", "SyncStream.read ", "thread.py:81)",
        "_wait_for_tstate_lock", "Condition.wait", "Event.wait", "Queue.get", "lock.acquire",
        "time.sleep", "serve_forever", "_write_to_self", "Thread.join", "select (")
_FRAME = re.compile(r"^(.*) \((.*?):(\d+)\)$")


def read_raw(text: str) -> list[tuple[str, int]]:
    """py-spy's raw output: one ``frame;frame;... count`` per stack (a process's command
    line may hold newlines, so a record ends at the first line ending in a count)."""
    records: list[tuple[str, int]] = []
    lines: list[str] = []
    for line in text.split("\n"):
        lines.append(line)
        found = re.match(r"^(.*) (\d+)$", line)
        if found and lines[0].startswith("process "):
            stack = "\n".join(lines)
            records.append((stack[: -len(found.group(2)) - 1], int(found.group(2))))
            lines = []
    return records


def _file(frame: str) -> str:
    found = _FRAME.match(frame)
    return found.group(2) if found else frame


def owner(frame: str) -> str | None:
    path = _file(frame)
    if "importlib._bootstrap" in frame or "_pytest/assertion/rewrite" in path:
        return "import"
    for prefix, name in (("pytest_sabot/sim/", "sim"), ("pytest_sabot/gateway/", "gateway"),
                         ("pytest_sabot/", "harness")):
        if path.startswith(prefix) or f"/{prefix}" in path:
            return name
    if any(path.startswith(p) or f"/{p}" in path for p in FRAMEWORKS):
        return "framework"
    if any(path.startswith(p) or f"/{p}" in path for p in PYTEST):
        return "pytest"
    return None


def summarise(records: list[tuple[str, int]]) -> dict[str, Counter[str]]:
    """Counters of samples: ``roles`` (incl. idle), ``<role>`` per bucket, and per-module
    counters ``<bucket> in <role>`` for harness/gateway/sim/framework (module [library])."""
    out: dict[str, Counter[str]] = {"roles": Counter()}
    for stack, count in records:
        parts = stack.split(";")
        depth = sum(1 for p in parts if p.startswith("process "))
        frames = [p for p in parts if not p.startswith("process ")]
        role = {1: "controller", 2: "worker"}.get(depth, "child process")
        if frames and any(w in frames[-1] for w in IDLE):
            out["roles"]["idle"] += count
            continue
        out["roles"][role] += count
        bucket, where, library = "other", "", ""
        if any(owner(f) == "import" for f in frames):
            bucket = "import"
        else:
            for frame in reversed(frames):
                found = owner(frame)
                if found:
                    bucket, where = found, _file(frame)
                    break
                if not library:
                    library = _file(frame).split("/")[0]
        out.setdefault(role, Counter())[bucket] += count
        if bucket in ("harness", "gateway", "sim"):
            key = where + (f" [{library}]" if library else "")
            out.setdefault(f"{bucket} in {role}", Counter())[key] += count
        elif bucket == "framework":
            out.setdefault(f"{bucket} in {role}", Counter())[where.split("/")[0]] += count
    return out


def report(summary: dict[str, Counter[str]], top: int) -> str:
    roles = summary["roles"]
    total = sum(roles.values())
    lines = [f"samples {total}; " + ", ".join(
        f"{r} {n} ({n / total:.0%})" for r, n in roles.most_common())]
    for role in ("controller", "worker", "child process"):
        buckets = summary.get(role)
        if not buckets:
            continue
        busy = sum(buckets.values())
        lines.append(f"{role}: {busy} busy samples")
        lines += [f"  {b:<10}{n:>7}  {n / busy:6.1%}" for b, n in buckets.most_common()]
    # By-module shares are of the processes that ran the cells: the workers, or the
    # controller itself in a session without xdist (-p no:xdist, -n 0).
    base_role = "worker" if summary.get("worker") else "controller"
    base = sum(summary.get(base_role, Counter()).values()) or 1
    whose = "workers'" if base_role == "worker" else "controller's"
    for bucket in ("harness", "gateway", "sim", "framework"):
        modules = summary.get(f"{bucket} in {base_role}")
        if modules:
            lines.append(f"{bucket}, by module (share of the {whose} busy samples):")
            lines += [f"  {n:>6}  {n / base:5.1%}  {k}" for k, n in modules.most_common(top)]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--raw", type=Path, help="py-spy raw output to sum (written by --run)")
    parser.add_argument("--run", action="store_true", help="profile a pytest session first")
    parser.add_argument("--rate", type=int, default=40, help="samples per second (py-spy)")
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("pytest_args", nargs="*", help="the session's pytest arguments")
    args = parser.parse_args()
    raw = args.raw or Path("wave-profile.raw")
    if args.run:
        spy = shutil.which("py-spy")
        if spy is None:
            print("py-spy is not installed (pip install py-spy)", file=sys.stderr)
            return 2
        subprocess.run([spy, "record", "--subprocesses", "--format", "raw", "-r",
                        str(args.rate), "-o", str(raw), "--", sys.executable, "-m", "pytest",
                        "-q", "-p", "no:cacheprovider", *args.pytest_args], check=False)
    if not raw.is_file():
        print(f"{raw}: no such profile (give --raw FILE or --run)", file=sys.stderr)
        return 2
    print(report(summarise(read_raw(raw.read_text("utf-8", errors="replace"))), args.top))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
