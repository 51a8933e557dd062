"""How often each registered anchor fires on clean runs (SPEC.md S10.10, the collision review).

An anchor that fires on no-fault baseline traces measures nothing about the planted fault.
For every anchor of a registry this module counts, over recorded traces:

* clean FLAGS fires: baseline traces of the anchor's task with at least one non-none FLAGS
  line whose content contains the anchor (parsed exactly as the scorer parses it, by import
  from ``pytest_sabot.scoring``, so the two cannot drift);
* clean text fires: baseline traces of that task where the anchor occurs in any persisted
  event text at all (a diagnostic of how common the string is in the run, not a flag);
* faulted FLAGS fires: traces of the anchor's own (task, operator) cell with an anchored
  non-none FLAGS line at or after the injection seq, for contrast.

The counting is pure (``fire_rates``); reading the reports directory is ``load_traces``.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_sabot.commands.failure import fail
from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.core.exit_codes import EXIT_PASS
from pytest_sabot.core.models.anchors import Anchor, AnchorRegistry, load_anchor_registry
from pytest_sabot.core.models.trace import Trace, injection_seq
from pytest_sabot.core.paths import standard_root
from pytest_sabot.core.trace_io import TRACE_FILE, read_trace
from pytest_sabot.matrix.cells import load_wave_anchors, load_wave_spec, wave_path
from pytest_sabot.scoring.anchors import anchor_pattern
from pytest_sabot.scoring.flags import collect_flags

__all__ = ["AnchorRate", "fire_rates", "load_traces", "main", "render_json", "render_table"]


@dataclass(frozen=True)
class AnchorRate:
    """Fire counts of one anchor of one (task, operator) entry."""

    task: str
    operator: str
    anchor: str
    word_boundary: bool
    baselines: int
    clean_flags_fires: int
    clean_text_fires: int
    faulted: int
    faulted_flags_fires: int

    @staticmethod
    def _rate(hits: int, total: int) -> float | None:
        return hits / total if total else None

    @property
    def clean_flags_rate(self) -> float | None:
        return self._rate(self.clean_flags_fires, self.baselines)

    @property
    def clean_text_rate(self) -> float | None:
        return self._rate(self.clean_text_fires, self.baselines)

    @property
    def faulted_flags_rate(self) -> float | None:
        return self._rate(self.faulted_flags_fires, self.faulted)


def _texts(trace: Trace) -> list[str]:
    """Every persisted event text, plus the stripped artifact head line (pin a)."""
    texts = [event.text for event in trace.events if event.text]
    for event in trace.of_kind("artifact"):
        if event.data.flags_line:
            texts.append(event.data.flags_line)
    return texts


def _flag_hits(trace: Trace, anchors: Sequence[Anchor], from_seq: int | None) -> set[str]:
    """Anchor texts found in the trace's non-none FLAGS lines (from ``from_seq`` on)."""
    records = collect_flags(trace, injection_seq=from_seq, anchors=anchors, counting=False)
    return {
        hit
        for record in records
        if record.after_injection and not record.none_form
        for hit in record.anchors_hit
    }


def fire_rates(traces: Iterable[Trace], registry: AnchorRegistry) -> list[AnchorRate]:
    """Per anchor of ``registry`` (in registry order): clean and faulted fire counts."""
    by_task_clean: dict[str, list[Trace]] = {}
    by_cell_faulted: dict[tuple[str, str], list[tuple[Trace, int]]] = {}
    for trace in traces:
        start = trace.start
        if start.operator is None:
            by_task_clean.setdefault(start.task, []).append(trace)
            continue
        seq = injection_seq(trace)
        if seq is not None:
            by_cell_faulted.setdefault((start.task, start.operator), []).append((trace, seq))

    rates: list[AnchorRate] = []
    for entry in registry.cells:
        anchors = list(entry.anchors)
        clean = by_task_clean.get(entry.task, [])
        faulted = by_cell_faulted.get((entry.task, entry.operator), [])
        clean_flags = [_flag_hits(trace, anchors, None) for trace in clean]
        clean_texts = [_texts(trace) for trace in clean]
        faulted_flags = [_flag_hits(trace, anchors, seq) for trace, seq in faulted]
        for anchor in anchors:
            pattern = anchor_pattern(anchor)
            rates.append(
                AnchorRate(
                    task=entry.task,
                    operator=entry.operator,
                    anchor=anchor.text,
                    word_boundary=anchor.word_boundary,
                    baselines=len(clean),
                    clean_flags_fires=sum(anchor.text in hits for hits in clean_flags),
                    clean_text_fires=sum(
                        any(pattern.search(text) for text in texts) for texts in clean_texts
                    ),
                    faulted=len(faulted),
                    faulted_flags_fires=sum(anchor.text in hits for hits in faulted_flags),
                )
            )
    return rates


def load_traces(reports_dir: Path) -> list[Trace]:
    """Every finished trace (events.jsonl) under ``reports_dir``, in path order.

    Unfinished ``.partial`` traces are left out: a run that never finished is not a clean
    run to measure against.
    """
    return [read_trace(path) for path in sorted(reports_dir.rglob(TRACE_FILE))]


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def render_table(rates: Sequence[AnchorRate]) -> str:
    """A Markdown table, one row per anchor."""
    header = (
        "| task | op | anchor | bounded | baselines | clean FLAGS fires | clean FLAGS rate "
        "| clean text fires | clean text rate | faulted | faulted FLAGS rate |"
    )
    rule = "|" + "---|" * 11
    lines = [header, rule]
    for r in rates:
        anchor = r.anchor.replace("|", "\\|")
        lines.append(
            f"| {r.task} | {r.operator} | `{anchor}` | {'yes' if r.word_boundary else 'no'} "
            f"| {r.baselines} | {r.clean_flags_fires} | {_pct(r.clean_flags_rate)} "
            f"| {r.clean_text_fires} | {_pct(r.clean_text_rate)} "
            f"| {r.faulted} | {_pct(r.faulted_flags_rate)} |"
        )
    return "\n".join(lines) + "\n"


def render_json(rates: Sequence[AnchorRate]) -> list[dict[str, object]]:
    """The same numbers as plain JSON-able rows."""
    return [
        {
            "task": r.task,
            "operator": r.operator,
            "anchor": r.anchor,
            "word_boundary": r.word_boundary,
            "baselines": r.baselines,
            "clean_flags_fires": r.clean_flags_fires,
            "clean_flags_rate": r.clean_flags_rate,
            "clean_text_fires": r.clean_text_fires,
            "clean_text_rate": r.clean_text_rate,
            "faulted": r.faulted,
            "faulted_flags_fires": r.faulted_flags_fires,
            "faulted_flags_rate": r.faulted_flags_rate,
        }
        for r in rates
    ]


def main(argv: Sequence[str] | None = None) -> int:
    """Command line of scripts/anchor_fire_rates.py."""
    parser = argparse.ArgumentParser(
        prog="anchor_fire_rates.py",
        description="Per anchor: how often it fires in FLAGS lines (and in any event text) "
        "of clean baseline traces, next to its own cell's faulted rate.",
    )
    parser.add_argument("reports", type=Path, help="directory of recorded runs (events.jsonl)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--anchors", type=Path, help="anchor registry YAML to measure")
    source.add_argument("--wave", help="measure the registry the wave names (default: 3)")
    parser.add_argument("--root", type=Path, default=None,
                        help="directory holding cells/ (default: the installed standard)")
    parser.add_argument("--json", action="store_true", help="print JSON rows, not a table")
    args = parser.parse_args(argv)

    try:
        if args.anchors is not None:
            registry = load_anchor_registry(args.anchors)
        else:
            root = standard_root(args.root)
            wave = args.wave or "3"
            wave_file = wave_path(wave, root)
            spec = load_wave_spec(wave_file)
            loaded = load_wave_anchors(spec, wave_file)
            if loaded is None:
                raise SabotDataError(wave_file, "anchors", "a wave with a FLAGS anchor registry")
            registry = loaded
        if not args.reports.is_dir():
            raise SabotDataError(args.reports, "reports", "a directory of recorded runs")
        traces = load_traces(args.reports)
    except SabotDataError as err:
        return fail("error", err)
    rates = fire_rates(traces, registry)
    baselines = sum(1 for t in traces if t.start.operator is None)
    if args.json:
        print(json.dumps({"registry": registry.registry, "traces": len(traces),
                          "baselines": baselines, "anchors": render_json(rates)}, indent=2))
    else:
        print(f"registry {registry.registry}: {len(traces)} traces, {baselines} baselines\n")
        print(render_table(rates), end="")
    return EXIT_PASS
