"""The offline HTML report: one self-contained page per results directory, compare and
lab run, readable from ``file://`` with no network request of any kind.

* :func:`render_results_html` / :func:`write_results_html`: a Sabot results directory
  (results.json and its ``cells/`` folders): scoreboard with intervals, the median and
  band, the funnel and an operator x task heatmap per row, the exclusion appendix, the
  soft tier's kappa, and one drill-down per cell (timeline, injection, acts, the own
  checks' words, the landing probe, the soft-tier quote).
* :func:`render_compare_html` / :func:`write_compare_html`: two results directories
  paired as ``sabot compare`` pairs them (the numbers are those of
  :func:`pytest_sabot.results.compare.compare`).
* :func:`render_lab_html` / :func:`write_lab_html`: a lab run record (run.json): the four
  evidence streams side by side, each violation linked to its events, fault coverage and
  the gate.

Cell drill-downs are either inline (every cell inside report.html, collapsed) or pages (a
folder ``report-cells/`` beside report.html, one small page per cell, linked relatively):
``layout="auto"`` keeps a slice in one file and gives a whole wave its folder, so the main
page stays fast to open (docs/REPORT.md has the measurements).

Command line: ``python -m pytest_sabot.report.html DIR [DIR_B] [--out FILE]``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pytest_sabot.core.errors import SabotDataError

if TYPE_CHECKING:
    from pytest_sabot.lab.record import LabRun

Layout = Literal["inline", "pages", "auto"]
REPORT_FILE = "report.html"
COMPARE_FILE = "compare.html"
INLINE_LIMIT = 120  # cells: up to this many, "auto" keeps every drill-down in one file
RESULTS_FILE = "results.json"
LAB_RUN_FILE = "run.json"
LAB_PAGE = "lab_run.html.j2"


def _pages_dir(report: Path) -> Path:
    return report.with_name(report.stem + "-cells")


def _choose(layout: Layout, cells: int) -> Literal["inline", "pages"]:
    if layout == "auto":
        return "inline" if cells <= INLINE_LIMIT else "pages"
    return layout


def _load(
    results_dir: Path, results_file: Path | None = None
) -> tuple[dict[str, Any], str | None, dict[str, Any]]:
    """results.json as JSON (``results_file`` when given: a board kept apart from the
    directory whose records it scores, SPEC I97, I98), its status line, and the words the
    text reports use for a partial board, a disclosed defect and the credits
    (report/render.py), so the page says what RESULTS.md says."""
    from pytest_sabot.report import render
    from pytest_sabot.results import ResultsFile
    from pytest_sabot.results.compare import load_side

    if not results_dir.is_dir():
        raise SabotDataError(results_dir, "", "a results directory holding results.json",
                             "no such directory")
    results = load_side(results_file or results_dir)
    status = getattr(results, "status_line", None)
    words: dict[str, Any] = {"credits": render.CREDITS, "partial": None, "disclosures": [],
                             "reaction_note": render.REACTION_NOTE,
                             "soft_tier_note": render.SOFT_TIER_NOTE}
    if isinstance(results, ResultsFile):
        words.update(partial=render.partial_line(results),
                     disclosures=render.disclosure_lines(results),
                     outside=render.outside_line(results))
    return (results.model_dump(mode="json"), status if isinstance(status, str) else None,
            words)


def _results_pages(
    results_dir: Path, *, layout: Layout, report: Path, results_file: Path | None = None
) -> tuple[str, dict[str, str]]:
    """The main page and, in the pages layout, each cell's page by file name."""
    from pytest_sabot.report.html._common import relative_base, render
    from pytest_sabot.report.html._results import build

    results, status, words = _load(results_dir, results_file)
    chosen = _choose(layout, len(results.get("cells") or []))
    pages_dir = _pages_dir(report)
    view = build(results_dir, results, status_line=status, layout=chosen,
                 pages_dir=pages_dir.name, words=words)
    main = render("results.html.j2", view=view, title=_title(results),
                  trace_base=relative_base(report.parent, results_dir))
    pages: dict[str, str] = {}
    if chosen == "pages":
        trace_base = relative_base(pages_dir, results_dir)
        for cell in view.cells:
            pages[cell.page] = render(
                "cell_page.html.j2", cell=cell, view=view, trace_base=trace_base,
                title=f"{cell.id}: {cell.status}", report_href=f"../{report.name}",
            )
    return main, pages


def _title(results: dict[str, Any]) -> str:
    kind = "keyless fixtures" if results.get("fixture") else str(results.get("model", ""))
    return f"Sabot results: wave {results.get('wave', '?')}, {results.get('rules', '?')} ({kind})"


def render_results_html(
    results_dir: Path | str, *, layout: Layout = "inline", results_file: Path | None = None
) -> str:
    """report.html of a results directory as one string, every cell inline (collapsed).

    Links to the raw traces are relative to ``results_dir`` (the page is meant to sit
    beside results.json). ``layout="pages"`` renders the main page only; use
    :func:`write_results_html` to write the per-cell pages with it. ``results_file`` is the
    run's own results.json when it is not the directory's (a slice or a reading kept
    apart); the cells' records are read from ``results_dir`` either way."""
    results_dir = Path(results_dir)
    main, _ = _results_pages(results_dir, layout=layout, report=results_dir / REPORT_FILE,
                             results_file=results_file)
    return main


def write_results_html(
    results_dir: Path | str,
    path: Path | str | None = None,
    *,
    layout: Layout = "auto",
    results_file: Path | None = None,
) -> Path:
    """Write report.html (default: beside results.json) and, in the pages layout, one
    page per cell in ``<report stem>-cells/`` beside it. Returns the report's path."""
    from pytest_sabot.core.trace_io import write_text_atomic

    results_dir = Path(results_dir)
    out = Path(path) if path is not None else results_dir / REPORT_FILE
    pages_dir = _pages_dir(out)
    main, pages = _results_pages(results_dir, layout=layout, report=out,
                                 results_file=results_file)
    if pages:
        pages_dir.mkdir(parents=True, exist_ok=True)
        for name, text in pages.items():
            _write_quick(pages_dir / name, text)
    write_text_atomic(out, main)
    return out


def _write_quick(path: Path, text: str) -> None:
    """Replace one derived page atomically, without an fsync per page."""
    from pytest_sabot.core.secrets import scrub_text

    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    tmp.write_text(scrub_text(text), encoding="utf-8")
    os.replace(tmp, path)


def render_compare_html(a_dir: Path | str, b_dir: Path | str) -> str:
    """The paired comparison of two results directories (``sabot compare``'s numbers)."""
    from pytest_sabot.report.html._common import render
    from pytest_sabot.report.html._compare import build
    from pytest_sabot.results.compare import compare, load_side

    a_dir, b_dir = Path(a_dir), Path(b_dir)
    a, b = load_side(a_dir), load_side(b_dir)
    comparison = compare(a, b, a_path=str(a_dir), b_path=str(b_dir))
    view = build(comparison, a, b)
    return render("compare.html.j2", view=view, title="Sabot paired comparison")


def write_compare_html(
    a_dir: Path | str, b_dir: Path | str, path: Path | str | None = None
) -> Path:
    """Write the comparison page (default: compare.html in B's directory)."""
    from pytest_sabot.core.trace_io import write_text_atomic

    out = Path(path) if path is not None else Path(b_dir) / COMPARE_FILE
    write_text_atomic(out, render_compare_html(a_dir, b_dir))
    return out


def render_lab_record(record: LabRun) -> str:
    """One lab run's page from its record alone (a pure function of the pydantic model:
    the same record gives the same bytes). The page is ``lab_run.html.j2``, built from the
    macros of ``lab_macros.html.j2``, which other pages include."""
    from pytest_sabot.report.html._common import render
    from pytest_sabot.report.html._lab import build

    return render(LAB_PAGE, view=build(record), title=f"Sabot lab run {record.run_id}")


def render_lab_html(run_json_path: Path | str) -> str:
    """A lab run record (run.json, or the directory holding it) as one page."""
    from pytest_sabot.lab.record import read_run

    return render_lab_record(read_run(Path(run_json_path)))


def write_lab_html(run_json_path: Path | str, path: Path | str | None = None) -> Path:
    """Write the lab run's page (default: report.html beside run.json)."""
    from pytest_sabot.core.trace_io import write_text_atomic

    source = Path(run_json_path)
    folder = source if source.is_dir() else source.parent
    out = Path(path) if path is not None else folder / REPORT_FILE
    write_text_atomic(out, render_lab_html(source))
    return out


# --------------------------------------------------------------------------- other renderers
# The views the pages above render, for another renderer of the same templates (the local
# inspector, ``sabot serve``): the numbers are the same ones, shaped the same way.


def results_page_view(
    results_dir: Path | str,
    *,
    layout: Layout = "auto",
    pages_dir: str = "",
    results_file: Path | None = None,
) -> Any:
    """The view report.html renders for a results directory (a ``ResultsView``); in the
    pages layout each cell's drill-down links to ``pages_dir/<cell page>``."""
    from pytest_sabot.report.html._results import build

    results_dir = Path(results_dir)
    results, status, words = _load(results_dir, results_file)
    chosen = _choose(layout, len(results.get("cells") or []))
    return build(results_dir, results, status_line=status, layout=chosen,
                 pages_dir=pages_dir, words=words)


def cell_page_view(
    results_dir: Path | str, cell_id: str, results_file: Path | None = None
) -> tuple[Any, dict[str, Any]] | None:
    """One cell's drill-down (a ``CellView``) and what its page shows above it (the run's
    banners and label), reading that cell's folder alone; None for a cell the run does not
    have."""
    from pytest_sabot.report.html._cells import cell_view
    from pytest_sabot.report.html._results import banners

    results_dir = Path(results_dir)
    results, status, _ = _load(results_dir, results_file)
    for verdict in results.get("cells") or []:
        if isinstance(verdict, dict) and verdict.get("cell_id") == cell_id:
            return cell_view(results_dir, verdict), {
                "results": results, "banners": banners(results, status),
            }
    return None


def compare_page_view(a: Any, b: Any, *, a_path: str, b_path: str) -> Any:
    """The view compare.html renders for two loaded results (``sabot compare``'s numbers)."""
    from pytest_sabot.report.html._compare import build
    from pytest_sabot.results.compare import compare

    return build(compare(a, b, a_path=a_path, b_path=b_path), a, b)


def lab_page_view(record: Any) -> Any:
    """The view the lab run's page renders for a run record."""
    from pytest_sabot.report.html._lab import build

    return build(record)


__all__ = [
    "COMPARE_FILE",
    "INLINE_LIMIT",
    "REPORT_FILE",
    "Layout",
    "cell_page_view",
    "compare_page_view",
    "lab_page_view",
    "render_compare_html",
    "render_lab_html",
    "render_lab_record",
    "render_results_html",
    "results_page_view",
    "write_compare_html",
    "write_lab_html",
    "write_results_html",
]
