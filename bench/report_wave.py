"""Benchmark: the HTML report of a whole wave, written and opened in headless Chromium.

    python bench/report_wave.py                  # runs keyless wave 1 (-n 2) into a temp dir
    python bench/report_wave.py reports/wave-1   # an already scored results directory

For each layout (``inline``: every drill-down inside report.html; ``pages``: one page per
cell in a folder beside it) it reports, from one build and the median of several opens:
the time to write the report, the size of report.html (and of the cell pages), and in
Debian's Chromium (``/usr/bin/chromium``, headless, from ``file://``) the time to
DOMContentLoaded and to the load event, read from the page's own navigation timing, plus
the time from a click on a cell's summary to its drill-down being open. Figures are
printed, never asserted; the ratio inline / pages is the number to compare across
machines.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def _wave(out: Path, wave: str, workers: str) -> None:
    cmd = [sys.executable, "-m", "pytest", f"--sabot-wave={wave}", "-n", workers, "-q",
           "-p", "no:cacheprovider", "--sabot-out", str(out)]
    print("running", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, cwd=out.parent, stdout=subprocess.DEVNULL)


def _open(context: Any, url: str, opens: int) -> dict[str, float]:
    dcl, load, drill = [], [], []
    for _ in range(opens):
        page = context.new_page()
        page.goto(url, wait_until="load", timeout=120_000)
        timing = page.evaluate(
            "() => { const n = performance.getEntriesByType('navigation')[0];"
            " return [n.domContentLoadedEventEnd, n.loadEventEnd]; }"
        )
        dcl.append(timing[0])
        load.append(timing[1])
        summary = page.locator("details.cell > summary")
        if summary.count():
            last = summary.nth(summary.count() - 1)
            start = time.perf_counter()
            last.click()
            page.wait_for_function(
                "() => { const d = document.querySelectorAll('details.cell');"
                " return d[d.length - 1].open; }"
            )
            drill.append((time.perf_counter() - start) * 1000)
        page.close()
    out = {"dcl_ms": statistics.median(dcl), "load_ms": statistics.median(load)}
    if drill:
        out["drill_ms"] = statistics.median(drill)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="?", type=Path, help="a scored results directory")
    parser.add_argument("--wave", default="1")
    parser.add_argument("-n", "--workers", default="2")
    parser.add_argument("--opens", type=int, default=3, help="opens per page (median)")
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright

    from pytest_sabot.report.html import write_results_html

    work = Path(tempfile.mkdtemp(prefix="sabot-report-bench-"))
    results = args.results
    if results is None:
        results = work / f"wave-{args.wave}"
        _wave(results, args.wave, args.workers)
    cells = len(list((results / "cells").iterdir()))
    traces = sum(p.stat().st_size for p in (results / "cells").glob("*/events.jsonl"))
    print(f"results: {results} ({cells} cell folders, {traces:,} bytes of traces)")

    measured: dict[str, dict[str, float]] = {}
    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(work / "profile"), executable_path=CHROMIUM, headless=True, args=FLAGS
        )
        for layout in ("inline", "pages"):
            out = work / layout / "report.html"
            start = time.perf_counter()
            write_results_html(results, out, layout=layout)
            build_s = time.perf_counter() - start
            cell_pages = list((work / layout / "report-cells").glob("*.html"))
            row: dict[str, float] = {
                "build_s": build_s,
                "bytes": out.stat().st_size,
                "pages": len(cell_pages),
                "pages_bytes": sum(p.stat().st_size for p in cell_pages),
            }
            row.update(_open(context, out.as_uri(), args.opens))
            if cell_pages:
                biggest = max(cell_pages, key=lambda p: p.stat().st_size)
                cell = _open(context, biggest.as_uri(), args.opens)
                row["cell_page_bytes"] = biggest.stat().st_size
                row["cell_page_dcl_ms"] = cell["dcl_ms"]
            measured[layout] = row
        context.close()

    for layout, row in measured.items():
        print(f"\n{layout}:")
        print(f"  build            {row['build_s']:.2f} s")
        print(f"  report.html      {int(row['bytes']):,} bytes")
        print(f"  DOMContentLoaded {row['dcl_ms']:.0f} ms (median of {args.opens})")
        print(f"  load event       {row['load_ms']:.0f} ms")
        if "drill_ms" in row:
            print(f"  open a drill-down {row['drill_ms']:.0f} ms (click to open)")
        if row["pages"]:
            print(f"  cell pages       {int(row['pages'])} pages, "
                  f"{int(row['pages_bytes']):,} bytes in all")
            print(f"  largest page     {int(row['cell_page_bytes']):,} bytes, "
                  f"DOMContentLoaded {row['cell_page_dcl_ms']:.0f} ms")
    inline, pages = measured["inline"], measured["pages"]
    print(f"\ninline / pages: size x{inline['bytes'] / pages['bytes']:.1f}, "
          f"DOMContentLoaded x{inline['dcl_ms'] / pages['dcl_ms']:.1f}")
    print(f"output kept in {work}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
