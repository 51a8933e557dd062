"""The inspector's routes. Each handler reads through the history and report layers (in a
worker thread: the event loop keeps streaming progress meanwhile) and renders one of
report.html's templates; the guard (:mod:`.security`) has already checked the request.

    GET  /                         the runs list (filters: kind, wave, framework, model,
                                   label, since, until)
    GET  /run/ID                   a run: a wave's results page, or a lab run's page
    GET  /run/ID/cells?row=&status=   a run's cells, filtered
    GET  /run/ID/cell/CELL.html    one cell: verdict, why, timeline
    GET  /run/ID/file/PATH         a file of the run's folder (events.jsonl, ...), as text
    GET  /run/ID/export?format=    html, json or junit, as a download
    GET  /compare?a=ID&b=ID        two runs compared
    GET  /launch                   the launch forms
    POST /launch/wave | /launch/lab   start a run
    GET  /launch/LID               its command, status and output
    GET  /launch/LID/events        its output as server-sent events
    POST /launch/LID/cancel        stop it
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from markupsafe import Markup
from sse_starlette import EventSourceResponse
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.core.exit_codes import EXIT_GATE, EXIT_PASS
from pytest_sabot.history import HistoryError, RunNotFound
from pytest_sabot.web import views
from pytest_sabot.web.config import ServeConfig
from pytest_sabot.web.launch import (
    Launch,
    Launches,
    LaunchRefused,
    controller_names,
    lab_argv,
    personas,
    scenario_choices,
    wave_argv,
    wave_choices,
)
from pytest_sabot.web.pages import macro, render

TEXT_FILES = (".jsonl", ".json", ".md", ".txt", ".yaml", ".xml", ".log", ".partial")


CACHE_ENTRIES = 64
# Where a run's actions (export links, "Compare with") go in a page kept rendered: they
# list the history's other runs, so they are rendered afresh for every request.
ACTIONS_MARK = "<!--sabot-serve-run-actions-->"


@dataclass
class State:
    """What the handlers share: the settings, the launches, and what was already built or
    rendered (a wave's view reads every cell's trace, its page is 3 MB of HTML): each kept
    under a key naming what it was made from (the results file's path, mtime and size;
    the history's own), so a change on disk is never served stale."""

    config: ServeConfig
    launches: Launches
    cache: OrderedDict[tuple[Any, ...], Any] = field(default_factory=OrderedDict)
    locks: dict[tuple[Any, ...], threading.Lock] = field(default_factory=dict)

    def cached(self, key: tuple[Any, ...], make: Callable[[], Any]) -> Any:
        """``make()`` once per key (a second request for it waits for the first), the
        least recently used entries dropped beyond CACHE_ENTRIES."""
        try:
            found = self.cache[key]
        except KeyError:
            pass
        else:
            self.cache.move_to_end(key)
            return found
        with self.locks.setdefault(key, threading.Lock()):
            if key not in self.cache:
                self.cache[key] = make()
                while len(self.cache) > CACHE_ENTRIES:
                    old, _ = self.cache.popitem(last=False)
                    self.locks.pop(old, None)
            return self.cache[key]

    def history_stamp(self) -> tuple[Any, ...]:
        """What changes whenever the history records something (its file and its
        write-ahead log, whose mtime and size move with every commit)."""
        return tuple(_stamp(Path(f"{self.config.history}{suffix}"))
                     for suffix in ("", "-wal"))

    def serve(self) -> dict[str, Any]:
        c = self.config
        return {"root": str(c.root), "history": str(c.history), "project": str(c.project),
                "csrf": c.csrf, "read_only": c.read_only, "allow_live": c.allow_live,
                "trust_local_agent": c.trust_local_agent}


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size


def _state(request: Request) -> State:
    state: State = request.app.state.sabot
    return state


def _page(state: State, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    return HTMLResponse(render(template, serve=state.serve(), **context), status_code=status)


def _error(state: State, status: int, title: str, message: str) -> HTMLResponse:
    return _page(state, "serve_error.html.j2", status, title=title, message=message)


def _failure(state: State, exc: Exception) -> HTMLResponse:
    if isinstance(exc, RunNotFound):
        return _error(state, 404, "No such run", str(exc))
    if isinstance(exc, LaunchRefused):
        return _error(state, exc.status, "Not launched", str(exc))
    return _error(state, 500 if isinstance(exc, OSError) else 422, "Cannot show this",
                  str(exc))


PAGE_ERRORS = (HistoryError, SabotDataError, OSError, LaunchRefused, ValueError)

# --------------------------------------------------------------------------- runs


def _history_rows(config: ServeConfig) -> list[views.RunRow]:
    from pytest_sabot.history import list_runs
    from pytest_sabot.history.queries import frameworks_by_run

    if not config.history.exists():
        return []
    return views.rows_of(list_runs(config.history), frameworks_by_run(config.history))


def _run_rows(state: State) -> list[views.RunRow]:
    """Every run of the history (read again once the history has changed)."""
    rows: list[views.RunRow] = state.cached(
        ("rows", state.history_stamp()), lambda: _history_rows(state.config))
    return rows


def _runs_html(state: State, filters: dict[str, str]) -> str:
    def make() -> str:
        view = views.runs_view(_run_rows(state), filters)
        return render("serve_runs.html.j2", serve=state.serve(), view=view,
                      title="Sabot inspector: runs")

    html: str = state.cached(("runs", state.history_stamp(), tuple(sorted(filters.items()))),
                             make)
    return html


async def runs_page(request: Request) -> Response:
    state = _state(request)
    try:
        return HTMLResponse(await run_in_threadpool(
            _runs_html, state, dict(request.query_params)))
    except PAGE_ERRORS as exc:
        return _failure(state, exc)


def _summary(config: ServeConfig, run_id: str) -> Any:
    from pytest_sabot.history import show_run

    return show_run(config.history, run_id).summary


def _summary_of(state: State, ref: str) -> Any:
    """The history's summary of the run ``ref`` names (read again once the history has
    changed)."""
    return state.cached(("summary", ref, state.history_stamp()),
                        lambda: _summary(state.config, ref))


def _results_view(state: State, run_id: str) -> Any:
    """The view report.html renders for a run (its own results.json, its directory's cell
    records), built once while that results.json is unchanged (it reads every cell's
    trace)."""
    from pytest_sabot.report.html import results_page_view

    run_dir, own = _run_files(state, run_id)
    stat = own.stat()
    key = ("view", str(own.resolve()), run_id, stat.st_mtime_ns, stat.st_size)
    return state.cached(key, lambda: results_page_view(
        run_dir, layout="pages", pages_dir=f"/run/{run_id}/cell", results_file=own))


def _others(rows: list[views.RunRow], run_id: str, lab: bool) -> list[views.RunRow]:
    return [r for r in rows if r.run.run_id != run_id and (r.run.kind == "lab") == lab]


def _actions(state: State, run_id: str, lab: bool) -> str:
    """A run's export links and its "Compare with" (the history's other runs of its
    kind): rendered for every request, into a page kept rendered."""
    others = _others(_run_rows(state), run_id, lab=lab)
    return macro("serve_macros.html.j2", "run_actions", state.serve(), run_id,
                 "lab" if lab else "session", others)


def _wave_page(state: State, run_id: str) -> str:
    from pytest_sabot.history import load_run_results

    config = state.config
    stamp = state.history_stamp()
    run_id = _summary_of(state, run_id).run_id
    _, own = _run_files(state, run_id)
    stat = own.stat()
    note: str = state.cached(  # whether results.json still describes this run
        ("note", run_id, stamp, stat.st_mtime_ns, stat.st_size),
        lambda: load_run_results(config.history, run_id).note)
    if note:
        raise HistoryError(config.history, f"run {run_id}: {note}",
                           "Its results are still exported as json from the history's copy: "
                           f"/run/{run_id}/export?format=json")

    def make() -> str:
        view = _results_view(state, run_id)
        lowest = sorted(view.rows, key=views.score_key)
        return render("serve_results.html.j2", serve=state.serve(), view=view, run_id=run_id,
                      title=f"Run {run_id}: wave {view.results.get('wave', '?')}",
                      trace_base=f"/run/{run_id}/file/", actions=Markup(ACTIONS_MARK),
                      lowest_first=lowest, note="")

    key = ("wave", str(own.resolve()), run_id, stat.st_mtime_ns, stat.st_size)
    page: str = state.cached(key, make)
    return page.replace(ACTIONS_MARK, _actions(state, run_id, lab=False), 1)


def _lab_page(state: State, run_id: str) -> str:
    from pytest_sabot.history import load_lab_run
    from pytest_sabot.report.html import lab_page_view

    def make() -> str:
        record = load_lab_run(state.config.history, run_id)
        return render("serve_lab.html.j2", serve=state.serve(), view=lab_page_view(record),
                      run_id=run_id, actions=Markup(ACTIONS_MARK),
                      title=f"Lab run {record.run_id}")

    page: str = state.cached(("lab", run_id, state.history_stamp()), make)
    return page.replace(ACTIONS_MARK, _actions(state, run_id, lab=True), 1)


def warm(state: State) -> None:
    """Build what the URL ``sabot serve`` prints opens on (the newest run's page) and the
    runs list ahead of the first visit; a page that cannot be built says why when it is
    asked for."""
    try:
        rows = _run_rows(state)
        _runs_html(state, {})
        if rows:
            newest = rows[0].run
            (_lab_page if newest.kind == "lab" else _wave_page)(state, newest.run_id)
    except (*PAGE_ERRORS, KeyError):
        return


async def run_page(request: Request) -> Response:
    state = _state(request)
    ref = request.path_params["run_id"]
    try:
        summary = await run_in_threadpool(_summary_of, state, ref)
        if summary.run_id != ref:
            return RedirectResponse(f"/run/{summary.run_id}", status_code=303)
        page = _lab_page if summary.kind == "lab" else _wave_page
        return HTMLResponse(await run_in_threadpool(page, state, summary.run_id))
    except PAGE_ERRORS as exc:
        return _failure(state, exc)


def _run_files(state: State, run_id: str) -> tuple[Path, Path]:
    """(the run's directory, its own results.json), looked up once per state of the
    history."""
    from pytest_sabot.history import resolve_results

    history = state.config.history
    found: tuple[Path, Path] = state.cached(
        ("files", run_id, state.history_stamp()), lambda: resolve_results(history, run_id))
    return found


def _cells_page(state: State, run_id: str, row: str, status: str) -> str:
    view = _results_view(state, run_id)
    cells = [c for c in view.cells if (not row or c.row == row)
             and (not status or c.status_class == status or c.status == status)]
    statuses = sorted({c.status_class for c in view.cells})
    return render("serve_cells.html.j2", serve=state.serve(), run_id=run_id, cells=cells,
                  rows=[r.name for r in view.rows], row=row, status=status,
                  statuses=statuses, title=f"Run {run_id}: cells")


async def cells_page(request: Request) -> Response:
    state = _state(request)
    q = request.query_params
    try:
        return HTMLResponse(await run_in_threadpool(
            _cells_page, state, request.path_params["run_id"], q.get("row", ""),
            q.get("status", "")))
    except PAGE_ERRORS as exc:
        return _failure(state, exc)


def _cell_page(state: State, run_id: str, page: str) -> str | None:
    from pytest_sabot.report.html import cell_page_view

    run_dir, own = _run_files(state, run_id)
    found = cell_page_view(run_dir, page.removesuffix(".html"), own)
    if found is None:
        return None
    cell, around = found
    return render("serve_cell.html.j2", serve=state.serve(), cell=cell, view=around,
                  trace_base=f"/run/{run_id}/file/", report_href=f"/run/{run_id}",
                  why=views.why_text(cell), title=f"{cell.id}: {cell.status}")


async def cell_page(request: Request) -> Response:
    state = _state(request)
    run_id, page = request.path_params["run_id"], request.path_params["page"]
    try:
        html = await run_in_threadpool(_cell_page, state, run_id, page)
    except PAGE_ERRORS as exc:
        return _failure(state, exc)
    if html is None:
        return _error(state, 404, "No such cell", f"run {run_id} has no cell {page!r}")
    return HTMLResponse(html)


def _inside(base: Path, rel: str) -> Path | None:
    """``base/rel`` when it is a file inside ``base`` (no .., no link leading out)."""
    target = (base / rel).resolve()
    root = base.resolve()
    return target if target.is_relative_to(root) and target.is_file() else None


async def run_file(request: Request) -> Response:
    state = _state(request)
    run_id, rel = request.path_params["run_id"], request.path_params["path"]
    try:
        base = (await run_in_threadpool(_run_files, state, run_id))[0]
    except PAGE_ERRORS as exc:
        return _failure(state, exc)
    target = _inside(base, rel)
    if target is None or not target.name.endswith(TEXT_FILES):
        return _error(state, 404, "No such file",
                      f"run {run_id} has no text record {rel!r} in its folder")
    from pytest_sabot.core.secrets import scrub_text

    text = await run_in_threadpool(target.read_text, "utf-8", "replace")
    return PlainTextResponse(scrub_text(text))


def _export(state: State, run_id: str, fmt: str) -> tuple[str, str, str]:
    """(body, media type, file name) of a run's export."""
    from pytest_sabot.history import load_run_results

    config = state.config
    summary = _summary(config, run_id)
    if summary.kind == "lab":
        from pytest_sabot.commands.export import LAB_EXPORTS, lab_export_text
        from pytest_sabot.commands.lab_refs import lab_run_of

        if fmt not in LAB_EXPORTS:
            raise LaunchRefused(f"format {fmt!r}: html, json or junit")
        found = lab_run_of(summary.run_id, config.history)
        if found is None:
            raise RunNotFound(config.history, f"run {summary.run_id} is not a lab run")
        record, _source, folder = found
        media, name = LAB_EXPORTS[fmt]
        return lab_export_text(record, folder, fmt), media, name
    loaded = load_run_results(config.history, summary.run_id)
    if fmt == "json":
        return (loaded.results.model_dump_json(indent=2) + "\n", "application/json",
                "results.json")
    if fmt == "junit":
        from pytest_sabot.commands.export import junit_xml

        return junit_xml(loaded.results), "application/xml", "junit.xml"
    if fmt == "html":
        if loaded.note:
            raise LaunchRefused(f"{loaded.note}: its report needs its cells' records; export "
                                "json instead")
        from pytest_sabot.report.html import render_results_html

        run_dir, own = _run_files(state, summary.run_id)
        return (render_results_html(run_dir, results_file=own), "text/html", "report.html")
    raise LaunchRefused(f"format {fmt!r}: html, json or junit")


async def export(request: Request) -> Response:
    state = _state(request)
    run_id = request.path_params["run_id"]
    fmt = request.query_params.get("format", "")
    try:
        body, media, name = await run_in_threadpool(_export, state, run_id, fmt)
    except PAGE_ERRORS as exc:
        return _failure(state, exc)
    return Response(body, media_type=media, headers={
        "content-disposition": f'attachment; filename="{run_id}-{name}"'})


# --------------------------------------------------------------------------- compare


def lab_comparison(config: ServeConfig, a_id: str, b_id: str) -> Any:
    """Two lab runs compared as ``sabot compare A B`` compares them: the same function
    (:func:`pytest_sabot.commands.lab_compare.lab_comparison`, over the served history),
    so the page shows the gate and how it moved, the violations added and removed, each
    fault entry's coverage in both runs, the effects by kind and the first divergence."""
    from pytest_sabot.commands.lab_compare import lab_comparison as compare_lab_runs

    return compare_lab_runs(a_id, b_id, config.history)


def _compare_page(state: State, a_ref: str, b_ref: str) -> str:
    from pytest_sabot.history import load_run_results
    from pytest_sabot.report.html import compare_page_view

    config = state.config
    a_sum, b_sum = _summary(config, a_ref), _summary(config, b_ref)
    a_id, b_id = a_sum.run_id, b_sum.run_id
    if (a_sum.kind == "lab") != (b_sum.kind == "lab"):
        raise LaunchRefused(f"{a_id} is {'a lab run' if a_sum.kind == 'lab' else 'a scored run'}"
                            f" and {b_id} is not: compare two scored runs or two lab runs")
    if a_sum.kind == "lab":
        view = lab_comparison(config, a_id, b_id)
        return render("serve_lab_compare.html.j2", serve=state.serve(), c=view, a_id=a_id,
                      b_id=b_id, exit_code=EXIT_GATE if view.regressed else EXIT_PASS,
                      title=f"Lab runs {a_id} and {b_id}")
    a, b = load_run_results(config.history, a_id), load_run_results(config.history, b_id)
    view = compare_page_view(a.results, b.results, a_path=a.source, b_path=b.source)
    # a flipped cell links to its page in each run (a run whose results.json now holds
    # another session has no cell pages of its own: its note says so)
    cell_pages = {"A": f"/run/{a_id}/cell/", "B": f"/run/{b_id}/cell/"}
    return render("serve_compare.html.j2", serve=state.serve(), view=view, a_id=a_id,
                  b_id=b_id, notes=[n for n in (a.note, b.note) if n], cell_pages=cell_pages,
                  title=f"Compare {a_id} and {b_id}")


async def compare_page(request: Request) -> Response:
    state = _state(request)
    a, b = request.query_params.get("a", ""), request.query_params.get("b", "")
    if not a or not b:
        return _error(state, 400, "Two runs", "give two runs: /compare?a=RUN&b=RUN (pick them "
                      "on the runs list)")
    try:
        return HTMLResponse(await run_in_threadpool(_compare_page, state, a, b))
    except PAGE_ERRORS as exc:
        return _failure(state, exc)


# --------------------------------------------------------------------------- launch


def _launch_form(state: State, wave: str, error: str = "") -> str:
    waves = wave_choices(state.config.standard)
    chosen = wave if wave in waves else next(iter(waves), "")
    return render("serve_launch.html.j2", serve=state.serve(), waves=waves,
                  selected_wave=chosen, scenarios=scenario_choices(state.config.root),
                  controllers=controller_names(), personas=personas(),
                  launches=sorted(state.launches.all.values(), key=lambda x: -x.started),
                  error=error, title="Sabot inspector: launch")


async def launch_form(request: Request) -> Response:
    state = _state(request)
    if state.config.read_only:
        return _error(state, 403, "Read-only", "this server was started with --read-only: "
                      "nothing can be launched from it")
    try:
        return HTMLResponse(await run_in_threadpool(
            _launch_form, state, request.query_params.get("wave", "")))
    except PAGE_ERRORS as exc:
        return _failure(state, exc)


async def _fields(request: Request) -> dict[str, list[str]]:
    body = (await request.body()).decode("utf-8", "replace")
    return parse_qs(body, keep_blank_values=False)


async def launch_start(request: Request) -> Response:
    state = _state(request)
    kind = request.path_params["kind"]
    config = state.config
    if kind not in ("wave", "lab"):
        return _error(state, 404, "Not launched", f"nothing to launch as {kind!r}: wave or lab")
    try:
        if config.read_only:
            raise LaunchRefused("this server is read-only (--read-only): nothing can be "
                                "launched", status=403)
        fields = await _fields(request)
        out = state.launches.new_out_dir(kind)
        if kind == "wave":
            if fields.get("live_model"):
                fields["model"] = fields.pop("live_model")
            choices = await run_in_threadpool(wave_choices, config.standard)
            argv = wave_argv(fields, choices, config, out)
        else:
            if fields.get("agent_callable"):
                fields["agent"] = fields.pop("agent_callable")
            scenarios = await run_in_threadpool(scenario_choices, config.root)
            argv = lab_argv(fields, scenarios, config, out)
        launch = await state.launches.start(kind, argv, out)
    except PAGE_ERRORS as exc:
        return _failure(state, exc)
    return RedirectResponse(f"/launch/{launch.id}", status_code=303)


def _launch(state: State, request: Request) -> Launch | None:
    return state.launches.all.get(request.path_params["launch_id"])


async def launch_page(request: Request) -> Response:
    state = _state(request)
    launch = _launch(state, request)
    if launch is None:
        return _error(state, 404, "No such launch", "this server launched no run of that id "
                      "(launches are kept while the server runs; finished runs are in the "
                      "runs list)")
    return _page(state, "serve_launched.html.j2", launch=launch,
                 title=f"Launched {launch.id}: {launch.status}")


def end_event(launch: Launch) -> dict[str, Any]:
    return {"status": launch.status, "exit_code": launch.exit_code, "run_id": launch.run_id,
            "note": "; ".join(x for x in (launch.meaning, launch.note) if x)}


async def launch_events(request: Request) -> Response:
    state = _state(request)
    launch = _launch(state, request)
    if launch is None:
        return PlainTextResponse("no such launch", status_code=404)
    try:
        start = int(request.headers.get("last-event-id") or request.query_params.get("from")
                    or 0)
    except ValueError:
        start = 0

    async def stream() -> AsyncIterator[dict[str, str]]:
        index = max(0, start)

        def news() -> bool:
            return len(launch.lines) > index or launch.done

        while True:
            async with launch.changed:
                await launch.changed.wait_for(news)
                fresh = launch.lines[index:]
                finished = launch.settled
            for line in fresh:
                index += 1
                yield {"event": "line", "id": str(index), "data": line}
            if finished and index >= len(launch.lines):
                yield {"event": "end", "data": json.dumps(end_event(launch))}
                return
            if launch.done and not fresh:
                await asyncio.sleep(0.05)  # cancelled: the exit code is on its way

    return EventSourceResponse(stream(), ping=15)


async def launch_cancel(request: Request) -> Response:
    state = _state(request)
    launch = _launch(state, request)
    if launch is None:
        return _error(state, 404, "No such launch", "nothing to cancel")
    await state.launches.cancel(launch)
    return RedirectResponse(f"/launch/{launch.id}", status_code=303)


ROUTES = [
    Route("/", runs_page),
    Route("/run/{run_id}", run_page),
    Route("/run/{run_id}/cells", cells_page),
    Route("/run/{run_id}/cell/{page}", cell_page),
    Route("/run/{run_id}/file/{path:path}", run_file),
    Route("/run/{run_id}/export", export),
    Route("/compare", compare_page),
    Route("/launch", launch_form),
    Route("/launch/{kind:str}", launch_start, methods=["POST"]),
    Route("/launch/{launch_id}", launch_page),
    Route("/launch/{launch_id}/events", launch_events),
    Route("/launch/{launch_id}/cancel", launch_cancel, methods=["POST"]),
]
