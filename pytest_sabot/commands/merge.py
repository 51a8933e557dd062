"""``sabot merge DIR... --out OUT``: the shards of one wave (``--sabot-shard K/N``) as one
scored directory.

Every shard's records of its own selection (its cells, the baselines it pulled in, their
recordings), every session record and the judge's cache are copied into OUT, a new
directory: nothing is moved, nothing in a shard is changed, and a record found in two
shards is refused rather than chosen. OUT's results.json is then built from those records
exactly as the one session of the whole selection would have built it (SPEC I72), and
``merge.json`` says which shards it came from.

Shards are refused before anything is copied when they cannot be one run: another wave,
registration hash, rule version, model, judge, framework versions or filters; a shard
given twice, a shard of another split, or a shard missing.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import Any

from pydantic import Field

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.core.exit_codes import EXIT_ERROR, EXIT_INCONCLUSIVE, EXIT_PASS
from pytest_sabot.core.models.base import StrictModel

MERGE_FILE = "merge.json"
MERGE_SCHEMA_VERSION = "1"
SHARD_FILTER = "shard"
# What must be the same in every shard for their records to be one run's.
SAME = (
    ("wave", "wave"),
    ("registration_hash", "registration hash (cells, tasks and mappings)"),
    ("rules", "rule version"),
    ("wave_rules", "wave's rule version"),
    ("model", "pipeline model"),
    ("downgrade_model", "O4 downgrade model"),
    ("judge_spec", "judge"),
    ("upstream", "upstream"),
    ("versions", "framework versions"),
)


class MergedShard(StrictModel):
    """One shard directory a merge read."""

    dir: str = Field(description="The shard's output directory, as given.")
    shard: str = Field(description="K/N, from the shard's --sabot-shard.")
    run_id: str | None = Field(description="Run id of the shard's session.")
    status: str | None = Field(description="How the shard's session ended.")
    cells: list[str] = Field(description="Cells whose records were copied from it.")


class MergeRecord(StrictModel):
    """``<out>/merge.json``: where a merged directory's records came from."""

    schema_version: str = Field(MERGE_SCHEMA_VERSION, description="Format version.")
    tool: str = Field(description="pytest-sabot version that merged.")
    merged: str = Field(description="When (UTC, ISO 8601).")
    shards: list[MergedShard] = Field(description="The shards, in K order.")


def _refuse(path: Path, field: str, expected: str, got: object = None) -> SabotDataError:
    return SabotDataError(path, field, expected, got)


def _results(directory: Path) -> Any:
    from pytest_sabot.commands.results_dir import read_results_of

    return read_results_of(directory)


def check_shards(dirs: list[Path], shards: list[Any]) -> list[tuple[int, int]]:
    """(K, N) of every shard, once everything that must match matches (SabotDataError
    naming the file, the field and what was expected otherwise)."""
    first, first_dir = shards[0], dirs[0]
    split: list[tuple[int, int]] = []
    for directory, results in zip(dirs, shards, strict=True):
        path = directory / "results.json"
        for field, words in SAME:
            if getattr(results, field) != getattr(first, field):
                raise _refuse(
                    path, field,
                    f"the {words} of {first_dir}/results.json ({getattr(first, field)!r}): "
                    "shards of one run share it",
                    getattr(results, field),
                )
        sel, sel0 = results.selection, first.selection
        own = {k: v for k, v in sel.filters.items() if k != SHARD_FILTER}
        own0 = {k: v for k, v in sel0.filters.items() if k != SHARD_FILTER}
        for field, mine, theirs in (
            ("selection.filters", own, own0),
            ("selection.keyword", sel.keyword, sel0.keyword),
            ("selection.markexpr", sel.markexpr, sel0.markexpr),
        ):
            if mine != theirs:
                raise _refuse(
                    path, field,
                    f"the selection of {first_dir}/results.json ({theirs!r}): shards of one "
                    "run are run with the same options but --sabot-shard",
                    mine,
                )
        given = sel.filters.get(SHARD_FILTER)
        if not given:
            raise _refuse(path, "selection.filters.shard",
                          "a shard's results (a session run with --sabot-shard=K/N)", None)
        k, _, n = given[0].partition("/")
        split.append((int(k), int(n)))
    counts = {n for _, n in split}
    if len(counts) != 1:
        raise _refuse(dirs[-1] / "results.json", "selection.filters.shard",
                      "shards of one split (the same N in every --sabot-shard=K/N)",
                      sorted(f"{k}/{n}" for k, n in split))
    count = counts.pop()
    seen: dict[int, Path] = {}
    for directory, (k, _) in zip(dirs, split, strict=True):
        if k in seen:
            raise _refuse(directory / "results.json", "selection.filters.shard",
                          f"each shard once: shard {k}/{count} is also {seen[k]}", f"{k}/{count}")
        seen[k] = directory
    missing = sorted(set(range(1, count + 1)) - set(seen))
    if missing:
        raise _refuse(
            dirs[0] / "results.json", "selection.filters.shard",
            f"every shard of {count}: missing {', '.join(f'{k}/{count}' for k in missing)}",
            f"{len(seen)} given",
        )
    return split


def _copy_tree(source: Path, target: Path) -> None:
    if target.exists():
        raise _refuse(target, "", "a record found in one shard only (it is in two)", "a copy")
    shutil.copytree(source, target)


def _copy_file(source: Path, target: Path) -> None:
    """Copy unless the same file is there already (a content-addressed cache entry, a
    session record); a different one is refused."""
    if target.exists():
        if target.read_bytes() != source.read_bytes():
            raise _refuse(target, "", "the same file in every shard that has it", "different")
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(source, target)


def copy_records(directory: Path, results: Any, out: Path) -> list[str]:
    """The shard's records of its own selection, into ``out``; the cells copied."""
    from pytest_sabot.core.records import SESSIONS_DIR, cell_dir

    copied: list[str] = []
    for cid in [*results.selection.cell_ids, *results.selection.pulled_in]:
        source = cell_dir(directory, cid)
        if source.is_dir():
            _copy_tree(source, cell_dir(out, cid))
            copied.append(cid)
        recording = directory / "recordings" / cid
        if recording.is_dir():
            _copy_tree(recording, out / "recordings" / cid)
    for sub in (SESSIONS_DIR, "judge-cache"):
        for source in sorted((directory / sub).glob("*")) if (directory / sub).is_dir() else []:
            if source.is_file():
                _copy_file(source, out / sub / source.name)
    return copied


def _backend_note(summary: dict[str, Any] | None) -> str | None:
    """The judge backend's own note, as a shard's session had it: its summary's note
    without the fixture label the summary puts first."""
    from pytest_sabot.judge.run import SIM_JUDGE_LABEL

    if not summary or not summary.get("note"):
        return None
    note = str(summary["note"])
    if summary.get("fixture") and note.startswith(SIM_JUDGE_LABEL):
        note = note[len(SIM_JUDGE_LABEL):].removeprefix("; ")
    return note or None


def merge(dirs: list[Path], out: Path, root: str | None = None) -> Any:
    """Merge shard directories into ``out`` (new or empty); the merged ResultsFile."""
    from pytest_sabot import __version__
    from pytest_sabot.core.model_spec import parse_model
    from pytest_sabot.core.records import now_iso
    from pytest_sabot.core.trace_io import write_json_atomic, write_text_atomic
    from pytest_sabot.matrix.standard import load_standard
    from pytest_sabot.report.render import markdown
    from pytest_sabot.results import build_results, write_results
    from pytest_sabot.results.adjudicate import Provenance
    from pytest_sabot.session.gateway import combine

    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise _refuse(out, "--out", "a new or empty directory (records are never overwritten)",
                      "a directory with files")
    for directory in dirs:
        if out.resolve() == directory.resolve():
            raise _refuse(out, "--out", "a directory other than the shards'", str(directory))
    shards = [_results(d) for d in dirs]
    split = check_shards(dirs, shards)
    order = sorted(range(len(dirs)), key=lambda i: split[i][0])
    dirs = [dirs[i] for i in order]
    shards = [shards[i] for i in order]
    split = [split[i] for i in order]
    counted: dict[str, tuple[str, Path]] = {}
    for directory, results in zip(dirs, shards, strict=True):
        for cid, run in results.counted.items():
            if cid in counted:
                raise _refuse(directory / "results.json", f"counted.{cid}",
                              f"a cell counted in one shard only (also in {counted[cid][1]})",
                              run)
            counted[cid] = (run, directory)

    out.mkdir(parents=True, exist_ok=True)
    entries = []
    for directory, results, (k, n) in zip(dirs, shards, split, strict=True):
        cells = copy_records(directory, results, out)
        session = results.session
        entries.append(MergedShard(
            dir=str(directory), shard=f"{k}/{n}",
            run_id=session.run_id if session else None,
            status=session.status if session else None,
            cells=cells,
        ))

    first = shards[0]
    std = load_standard(first.wave, root, rules=first.rules)
    selected = {cid for r in shards for cid in r.selection.cell_ids}
    pulled = sorted({cid for r in shards for cid in r.selection.pulled_in} - selected)
    reasons = {n.cell_id: (n.reason, n.detail) for r in shards for n in r.selection.not_run}
    judge = None
    if first.judge_spec != "none":
        from pytest_sabot.judge.run import collect_summary

        note = _backend_note(next((r.judge for r in shards if r.judge), None))
        runnable = [c.id for c in std.cells if c.id in selected and not c.carved_out]
        judge = collect_summary(out, runnable, first.judge_spec, note)
    filters = {k: v for k, v in first.selection.filters.items() if k != SHARD_FILTER}
    merged = build_results(
        std,
        out,
        selected_ids=[c.id for c in std.cells if c.id in selected],
        pulled_in=pulled,
        model=parse_model(first.model),
        upstream=first.upstream,
        downgrade_model=first.downgrade_model,
        judge_spec=first.judge_spec,
        judge=judge,
        spend=combine([r.spend for r in shards if r.spend]),
        session=None,
        provenance=Provenance(first.model, first.registration_hash, first.rules),
        not_run=reasons,
        counted={cid: run for cid, (run, _) in counted.items()},
        keyword=first.selection.keyword,
        markexpr=first.selection.markexpr,
        filters=filters,
    )
    write_results(merged, out)
    write_text_atomic(out / "RESULTS.md", markdown(merged))
    record = MergeRecord(tool=f"pytest-sabot {__version__}", merged=now_iso(), shards=entries)
    write_json_atomic(out / MERGE_FILE, record.model_dump(mode="json"))
    from pytest_sabot.report.html import write_results_html

    write_results_html(out)
    return merged


# What names the sessions rather than the scored selection: the session block, the run
# ids the records were counted from, and the spend of each session's gateways.
SESSION_FIELDS = ("session", "spend")


def comparable(document: dict[str, Any]) -> dict[str, Any]:
    """A results.json without what names the sessions that made it (SPEC I72): two runs
    of the same selection, merged or not, are equal here."""
    out = {k: v for k, v in document.items() if k not in SESSION_FIELDS}
    out["counted"] = sorted(document.get("counted", {}))
    return out


def cmd_merge(args: argparse.Namespace) -> int:
    from pytest_sabot.report.terminal import console, print_summary

    dirs: list[Path] = list(args.dirs)
    merged = merge(dirs, args.out, args.sabot_root)
    print(f"merged {len(dirs)} shard(s) into {args.out}: {len(merged.cells)} cells scored",
          flush=True)
    print_summary(console(), merged)  # fitted to the terminal, as every summary (SPEC I79)
    # A verdict a shard's results.json holds whose record no longer reads is named, and the
    # merge is said not whole: the shards themselves are untouched.
    damaged = [n for n in merged.selection.not_run if n.reason == "damaged record"]
    for n in damaged:
        print(f"damaged record: cell {n.cell_id}: {n.detail}", file=sys.stderr)
    if damaged:
        print(f"sabot merge: {len(damaged)} cell(s) of the shards have a damaged record, so "
              f"{args.out} is not the whole selection; run the shard holding each again with "
              "`pytest --sabot-resume --sabot-out=SHARD` (it sets the record aside and runs "
              "the cell), then merge into a new directory", file=sys.stderr)
    from pytest_sabot.history.record import record_session_end

    # The merge is a run of its own in the history, as a session is (one line, never a
    # failure: the merged directory is whole either way).
    said = record_session_end(getattr(args, "history", None), Path(args.out), merged, None)
    if said is not None:
        print(said[0], file=sys.stderr if said[1] else sys.stdout)
    if damaged:
        return EXIT_ERROR
    return EXIT_INCONCLUSIVE if merged.status_line else EXIT_PASS
