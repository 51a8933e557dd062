"""Growth: a synthetic wave at 1x (1,050 cells, wave 1's size) and 10x (10,500 cells),
each step a user runs timed at both sizes, and how the time grows.

    python bench/growth.py                       # runs a keyless seed-11 slice first (~1 min)
    python bench/growth.py --source DIR          # replicate an already recorded keyless run
    python bench/growth.py --factors 1 10 --keep # keep the synthetic waves (printed)

The records are real. A keyless slice of wave 1 (every framework, config, operator and
task at seed 11: 210 cells) runs once; its cell folders are then copied, each under a new
cell id, into a fresh output directory. A cell id is ``...-s<seed>``, and a record is
read only as the cell of a registered wave (its trace's ``run_start`` names the cell, its
outcome the registration hash it was made under), so copies named after seeds wave 1 does
not register would be refused or ignored by every reader. The bench therefore registers a
synthetic standard of its own instead: a copy of the shipped cells/, tasks/ and mappings/
whose wave-1 seed registry lists 5 x factor seeds (11-15 at 1x, 11-60 at 10x). Every copied
record is rewritten where it names its cell or its registration (``run_start``'s cell id
and seed, outcome.json's cell id and registration hash, soft.json's and not_run.json's
cell ids) through the product's own record models, and the session manifest records the
synthetic root (``root``), so ``sabot rescore``, the history and the inspector load the
synthetic matrix again as they load a ``--sabot-root`` session's. The i-th seed of the
synthetic wave is a copy of the recorded seeds taken in turn (all of them seed 11 by
default); the verdicts are the embedded model's fixtures, repeated, never measurements of
anything. The copies are written as the product writes records, without an fsync each.

Each step runs in a fresh interpreter (its imports done before the clock starts), so a step
pays for nothing another step loaded and its peak resident memory is its own:

  build     results.json as a session builds it as it ends (the judge summary, the two
            builds of ``session/finishing.py``), written with RESULTS.md
  rescore   ``sabot rescore DIR``: built again from the records, compared (must be identical)
  index     the run indexed into a new SQLite history (``index_output``, what ``sabot
            history index DIR`` runs)
  report    report.html written (``write_results_html``, the layout a session chooses)
  serve     ``sabot serve``'s application on 127.0.0.1 over real HTTP: the run's page
            requested the moment the server listens (it waits for the start-up build),
            then one cell's page

For each step it prints the time at each factor, the exponent log(t10 / t1) / log(10)
(1.0: linear) beside the target (<= 1.0: nothing grows faster than linearly), and the
step's peak RSS. Figures of one run on one machine: printed, never asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

if TYPE_CHECKING:
    from pytest_sabot.core.models.cells import Cell

BASE_SEEDS = 5  # wave 1 registers five seeds: 1x is wave 1's size
STEPS = ("build", "rescore", "index", "report", "serve")
TARGET = "<= 1.0 (nothing grows faster than linearly)"
SLICE = ["--sabot-wave=1", "--sabot-seed=11"]


# ----------------------------------------------------------------------------- the source


def record_slice(out: Path, filters: list[str], workers: str = "2") -> Path:
    """A keyless slice recorded into ``out`` as a user records one (a fresh interpreter,
    no history written)."""
    cmd = [sys.executable, "-m", "pytest", *filters, "-n", workers, "-q",
           "-p", "no:cacheprovider", "-p", "no:randomly", f"--sabot-out={out}",
           "--sabot-history=none"]
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "SABOT_")) and not k.endswith("_API_KEY")}
    out.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(cmd, check=True, cwd=out.parent, env=env, stdout=subprocess.DEVNULL)
    return out


# -------------------------------------------------------------------- the synthetic wave


def _record_text(model: BaseModel) -> str:
    """A record as the product writes it (``write_json_atomic``'s text), without the fsync
    per file a cell's run pays: thousands of copies are written here."""
    return json.dumps(model.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"


def synthetic_root(source: Path, dest: Path, seeds: int) -> Path:
    """A standard root under ``dest``: the shipped cells/, tasks/ and mappings/, with the
    source's wave narrowed to what the source recorded (its frameworks, configs,
    operators, tasks) and registering ``seeds`` seeds, counting up from the source's
    first. Returns the root."""
    import yaml

    from pytest_sabot.core.models.cells import SeedRegistry
    from pytest_sabot.core.paths import shipped_root
    from pytest_sabot.matrix.cells import load_wave, wave_path
    from pytest_sabot.results import read_results

    original = read_results(source)
    shipped = shipped_root()
    root = dest / "standard"
    for folder in ("cells", "tasks", "mappings"):
        shutil.copytree(shipped / folder, root / folder,
                        ignore=shutil.ignore_patterns("__pycache__"))
    spec, registry = load_wave(original.wave, root)
    recorded = [c for c in registry if c.id in original.counted]
    if not recorded:
        raise SystemExit(f"{source}: results.json counts no record of wave {original.wave}")
    first = min(c.seed for c in recorded)

    def kept(values: list[Any], attr: str) -> list[Any]:
        return [v for v in values if v in {getattr(c, attr) for c in recorded}]

    faults = {c.operator for c in recorded if c.operator is not None}
    narrowed = spec.model_copy(update={
        "frameworks": kept(spec.frameworks, "framework"),
        "configs": kept(spec.configs, "config"),
        "operators": [op for op in spec.operators if op in faults],
        "tasks": kept(spec.tasks, "task"),
    })
    path = wave_path(original.wave, root)
    document = narrowed.model_dump(mode="json", exclude_defaults=True)
    document.update(wave=spec.wave, title=spec.title, seeds_file=spec.seeds_file)
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    seeds_path = path.parent / "seeds" / spec.seeds_file
    registry_file = SeedRegistry(
        wave=spec.wave, registered="2026-12-01", seeds=list(range(first, first + seeds)),
        note=f"synthetic: {seeds} seeds, each a copy of a recorded seed (bench/growth.py)",
    )
    seeds_path.write_text(_record_text(registry_file), encoding="utf-8")
    return root


def _copy_cell(src: Path, dst: Path, cell: Cell, registration: str) -> None:
    """One recorded cell folder copied as ``cell``: its files read and written through the
    product's record models where they name the cell or its registration."""
    from pytest_sabot.core.models.trace import RunStart
    from pytest_sabot.core.records import OUTCOME_FILE, RunOutcome
    from pytest_sabot.core.trace_io import TRACE_FILE
    from pytest_sabot.judge.models import SoftRecord
    from pytest_sabot.judge.run import SOFT_FILE
    from pytest_sabot.results.adjudicate import NOT_RUN_FILE, NotRun

    cell_id = cell.id
    dst.mkdir(parents=True)
    for item in src.iterdir():
        target = dst / item.name
        if item.name == TRACE_FILE:
            first, _, rest = item.read_text(encoding="utf-8").partition("\n")
            start = RunStart.model_validate_json(first)
            start = start.model_copy(update={
                "data": start.data.model_copy(update={"cell_id": cell_id, "seed": cell.seed})})
            line = json.dumps(start.model_dump(mode="json"))
            target.write_text(line + "\n" + rest, encoding="utf-8")
        elif item.name == OUTCOME_FILE:
            outcome = RunOutcome.model_validate_json(item.read_bytes())
            target.write_text(_record_text(outcome.model_copy(update={
                "cell_id": cell_id, "registration_hash": registration})), encoding="utf-8")
        elif item.name == SOFT_FILE:
            soft = SoftRecord.model_validate_json(item.read_bytes())
            target.write_text(_record_text(soft.model_copy(update={"cell_id": cell_id})),
                              encoding="utf-8")
        elif item.name == NOT_RUN_FILE:
            note = NotRun.model_validate_json(item.read_bytes())
            target.write_text(_record_text(note.model_copy(update={
                "cell_id": cell_id, "baseline_id": cell.baseline_id,
                "registration_hash": registration})), encoding="utf-8")
        elif item.is_dir():
            shutil.copytree(item, target)
        else:
            shutil.copy2(item, target)


def synthetic_wave(source: Path, dest: Path, seeds: int) -> tuple[Path, Path, int]:
    """The source's records replicated into ``dest/out`` as a complete synthetic wave of
    ``seeds`` seeds registered in ``dest/standard``; returns (output dir, standard root,
    cells recorded). No results.json yet: building it is the first step timed."""
    from pytest_sabot.core.manifest import manifest_path, read_manifest
    from pytest_sabot.core.records import CELLS_DIR, cell_dir
    from pytest_sabot.matrix.standard import load_standard
    from pytest_sabot.results import read_results

    original = read_results(source)
    if original.session is None:
        raise SystemExit(f"{source}: results.json names no session (a merge?): give a run")
    root = synthetic_root(source, dest, seeds)
    std = load_standard(original.wave, root)
    registration = std.registration_hash()
    recorded = sorted({v.seed for v in original.cells})
    seed_list = sorted({c.seed for c in std.cells})
    out = dest / "out"
    (out / CELLS_DIR).mkdir(parents=True)
    made = 0
    for cell in std.cells:
        copied = recorded[seed_list.index(cell.seed) % len(recorded)]
        src_id = cell.model_copy(update={"seed": copied}).id
        _copy_cell(cell_dir(source, src_id), cell_dir(out, cell.id), cell, registration)
        made += 1
    own = read_manifest(manifest_path(source, original.session.run_id))
    ids = [c.id for c in std.cells]
    manifest = own.model_copy(update={
        "registration_hash": registration, "root": str(root), "recorded": len(ids),
        "selection": own.selection.model_copy(update={
            "cell_ids": ids, "filters": {}, "pulled_in": [],
            "args": ["--sabot-wave=1", f"--sabot-root={root}"]}),
    })
    target = manifest_path(out, own.run_id)
    target.parent.mkdir(parents=True)
    target.write_text(_record_text(manifest), encoding="utf-8")
    return out, root, made


# -------------------------------------------------------------------------- the steps


def session_end_build(out: Path, root: Path) -> Any:
    """results.json of the synthetic wave as its session builds it when it ends (the judge
    summary, a first build to learn the status, the final build), written with RESULTS.md."""
    from pytest_sabot.core.manifest import read_manifests
    from pytest_sabot.core.trace_io import write_text_atomic
    from pytest_sabot.judge.run import collect_summary
    from pytest_sabot.matrix.standard import load_standard
    from pytest_sabot.report.render import markdown
    from pytest_sabot.results import build_results, write_results
    from pytest_sabot.results.adjudicate import Provenance
    from pytest_sabot.results.build import SessionInfo

    (manifest,) = read_manifests(out)
    std = load_standard(manifest.wave, root)
    runnable = [c.id for c in std.cells if not c.carved_out]
    judge = collect_summary(out, runnable, manifest.judge, None)
    common: dict[str, Any] = dict(
        selected_ids=[c.id for c in std.cells], model=manifest.model,
        judge_spec=manifest.judge, judge=judge, versions=manifest.versions,
        provenance=Provenance(manifest.model, std.registration_hash(), std.rules.version),
    )

    def info(status: Any) -> SessionInfo:
        return SessionInfo(run_id=manifest.run_id, mode="fresh", status=status,
                           started=manifest.started,
                           ended=None if status == "running" else manifest.ended)

    build_results(std, out, session=info("running"), **common)
    results = build_results(std, out, session=info("complete"), **common)
    write_results(results, out)
    write_text_atomic(out / "RESULTS.md", markdown(results))
    return results


def _rescore(out: Path) -> dict[str, Any]:
    from pytest_sabot.commands.cli import main

    said = io.StringIO()
    with contextlib.redirect_stdout(said):
        code = main(["rescore", str(out)])
    first = said.getvalue().splitlines()[0]
    if code != 0 or "identical" not in first:
        raise SystemExit(f"sabot rescore {out}: exit {code}: {first}")
    return {"said": first}


def _serve(out: Path, history: Path, root: Path) -> dict[str, Any]:
    import socket
    import threading

    import httpx
    import uvicorn

    from pytest_sabot.history import list_runs
    from pytest_sabot.web import ServeConfig, create_app

    run_id = list_runs(history)[0].run_id
    cell = json.loads((out / "results.json").read_text("utf-8"))["cells"][-1]["cell_id"]
    start = time.perf_counter()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = ServeConfig(root=out.parent, history=history, standard=root, project=out.parent,
                         port=sock.getsockname()[1], read_only=True)
    server = uvicorn.Server(uvicorn.Config(create_app(config), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{config.port}", timeout=600,
                          headers={"Authorization": f"Bearer {config.token}"}) as client:
            page = client.get(f"/run/{run_id}")
            first = time.perf_counter() - start
            assert page.status_code == 200, page.text[:300]
            mark = time.perf_counter()
            answer = client.get(f"/run/{run_id}/cell/{cell}.html")
            cell_s = time.perf_counter() - mark
            assert answer.status_code == 200, answer.text[:300]
    finally:
        server.should_exit = True
        thread.join(10)
    return {"seconds": first, "cell_page_s": cell_s, "page_bytes": len(page.content)}


def run_step(step: str, out: Path, root: Path) -> dict[str, Any]:
    """One step, timed in this process after its imports; with its peak RSS (MB)."""
    import pytest_sabot.commands.cli
    import pytest_sabot.commands.rescore
    import pytest_sabot.history
    import pytest_sabot.report.html
    import pytest_sabot.report.render
    import pytest_sabot.report.terminal
    import pytest_sabot.results
    import pytest_sabot.web  # noqa: F401
    from pytest_sabot.history import index_output
    from pytest_sabot.report.html import write_results_html

    history = out.parent / "history.sqlite"
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    start = time.perf_counter()
    extra: dict[str, Any] = {}
    if step == "build":
        results = session_end_build(out, root)
        extra["cells"] = len(results.cells)
    elif step == "rescore":
        extra = _rescore(out)
    elif step == "index":
        report = index_output(out, history)
        if report.problems:
            raise SystemExit(f"index: {report.problems}")
    elif step == "report":
        extra["bytes"] = write_results_html(out).stat().st_size
    elif step == "serve":
        extra = _serve(out, history, root)
    else:
        raise SystemExit(f"unknown step {step!r}")
    seconds = extra.pop("seconds", time.perf_counter() - start)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"step": step, "seconds": seconds, "rss_before_mb": before, "peak_mb": peak,
            **extra}


def _child(step: str, out: Path, root: Path) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--step", step, "--out", str(out), "--root", str(root)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"step {step} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def exponent(t1: float, tk: float, factor: float) -> float:
    """How a time grows with the size: t ~ size ** exponent (1.0: linear)."""
    return math.log(tk / t1) / math.log(factor)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, help="a recorded keyless run to replicate")
    parser.add_argument("--factors", type=int, nargs="+", default=[1, 10])
    parser.add_argument("--keep", action="store_true", help="keep the synthetic waves")
    parser.add_argument("--step", choices=STEPS, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--root", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.step:  # one step, in its own interpreter
        print(json.dumps(run_step(args.step, args.out, args.root)))
        return 0

    work = Path(tempfile.mkdtemp(prefix="sabot-growth-"))
    source = args.source
    if source is None:
        source = work / "source" / "wave-1"
        print("recording a keyless slice:", " ".join(SLICE), flush=True)
        record_slice(source, SLICE)
    print(f"load average at start: {os.getloadavg()[0]:.2f} "
          f"{os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} ({os.cpu_count()} cores)")
    measured: dict[int, dict[str, dict[str, Any]]] = {}
    for factor in args.factors:
        dest = work / f"x{factor}"
        start = time.perf_counter()
        out, root, cells = synthetic_wave(source, dest, BASE_SEEDS * factor)
        print(f"{factor}x: {cells:,} cells replicated into {out} in "
              f"{time.perf_counter() - start:.1f} s", flush=True)
        measured[factor] = {}
        for step in STEPS:
            row = _child(step, out, root)
            measured[factor][step] = row
            print(f"  {step:8} {row['seconds']:8.2f} s   peak RSS {row['peak_mb']:6.0f} MB"
                  + (f"   cell page {row['cell_page_s']:.3f} s" if "cell_page_s" in row
                     else ""), flush=True)
        if not args.keep and factor != args.factors[-1]:
            shutil.rmtree(dest / "out" / "cells")
    low, high = min(args.factors), max(args.factors)
    ratio = high / low
    print(f"\nload average at end: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} "
          f"{os.getloadavg()[2]:.2f}")
    print(f"\n{'step':18} {f'{low}x (s)':>9} {f'{high}x (s)':>9} {'exponent':>9}  "
          f"{'peak RSS MB':>13}  target")
    rows = [(s, "seconds") for s in STEPS] + [("serve", "cell_page_s")]
    for step, key in rows:
        a, b = measured[low][step][key], measured[high][step][key]
        name = step if key == "seconds" else "serve: cell page"
        if step == "serve" and key == "seconds":
            name = "serve: run page"
        mem = (f"{measured[low][step]['peak_mb']:.0f}/{measured[high][step]['peak_mb']:.0f}"
               if key == "seconds" else "")
        print(f"{name:18} {a:9.3f} {b:9.3f} {exponent(a, b, ratio):9.2f}  {mem:>13}  {TARGET}")
    if args.keep:
        print(f"synthetic waves kept in {work}")
    else:
        shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
