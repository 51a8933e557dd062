"""The sharded CI recipe (SPEC I72): examples/ci/sabot-shards.yml is a GitHub Actions
workflow whose matrix runs every shard of one split once, uploads each shard's whole output
directory, and merges exactly those directories with a command sabot accepts."""

from __future__ import annotations

import fnmatch
import shlex
from pathlib import Path
from typing import Any

import yaml

from pytest_sabot.commands.cli import _parser
from pytest_sabot.session.options import shard

REPO = Path(__file__).resolve().parents[2]
WORKFLOW = REPO / "examples" / "ci" / "sabot-shards.yml"


def _jobs() -> dict[str, Any]:
    jobs: dict[str, Any] = yaml.safe_load(WORKFLOW.read_text("utf-8"))["jobs"]
    return jobs


def _for(text: str, k: int) -> str:
    return text.replace("${{ matrix.shard }}", str(k))


def _option(args: list[str], name: str) -> str:
    (value,) = [a.split("=", 1)[1] for a in args if a.startswith(f"{name}=")]
    return value


def test_I72_the_ci_matrix_runs_every_shard_of_one_split_once() -> None:
    job = _jobs()["shard"]
    ks = job["strategy"]["matrix"]["shard"]
    (command,) = [s["run"] for s in job["steps"] if s.get("run", "").startswith("pytest ")]
    given = {shard(_option(shlex.split(_for(command, k)), "--sabot-shard")) for k in ks}
    count = len(ks)
    assert given == {f"{k}/{count}" for k in range(1, count + 1)}
    assert job["strategy"]["fail-fast"] is False  # one shard's failure keeps the others


def test_I72_the_merge_reads_exactly_what_the_shards_upload() -> None:
    jobs = _jobs()
    shard_job, merge_job = jobs["shard"], jobs["merge"]
    assert merge_job["needs"] == "shard"
    (command,) = [s["run"] for s in shard_job["steps"] if s.get("run", "").startswith("pytest ")]
    (upload,) = [s for s in shard_job["steps"]
                 if s.get("uses", "").startswith("actions/upload-artifact@")]
    (download,) = [s for s in merge_job["steps"]
                   if s.get("uses", "").startswith("actions/download-artifact@")]
    (merge,) = [s["run"] for s in merge_job["steps"] if s.get("run", "").startswith("sabot ")]
    ks = shard_job["strategy"]["matrix"]["shard"]
    uploaded = {}
    for k in ks:
        out = _option(shlex.split(_for(command, k)), "--sabot-out")
        # the whole output directory: cells, sessions and judge cache, not just results
        assert _for(upload["with"]["path"], k).rstrip("/") == out
        name = _for(upload["with"]["name"], k)
        assert fnmatch.fnmatch(name, download["with"]["pattern"])
        uploaded[name] = f"{download['with']['path']}/{name}"
    args = _parser().parse_args(shlex.split(merge)[1:])
    assert args.command == "merge"
    assert [str(d) for d in args.dirs] == [uploaded[n] for n in sorted(uploaded)]
    (final,) = [s for s in merge_job["steps"]
                if s.get("uses", "").startswith("actions/upload-artifact@")]
    assert final["with"]["path"].rstrip("/") == str(args.out)
