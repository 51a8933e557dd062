"""``sabot serve [ROOT] [--port N] [--host H] [--read-only] [--allow-live]
[--trust-local-agent]``: the local inspector over an output root and its history
(docs/SERVE.md).

It listens on 127.0.0.1 unless ``--host`` names another address (with a warning: anyone
who can reach it and has the token can start processes), and prints one URL carrying a
fresh access token. Ctrl-C (or SIGTERM) stops it, and any run it launched, with exit 0.
"""

from __future__ import annotations

import argparse
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_sabot.commands.failure import fail
from pytest_sabot.core.exit_codes import EXIT_PASS

if TYPE_CHECKING:
    import uvicorn

    from pytest_sabot.history import RunSummary
    from pytest_sabot.web import ServeConfig

DEFAULT_PORT = 8765
BACKLOG = 2048  # uvicorn's own default
HOST_WARNING = (
    "warning: --host {host}: the inspector is reachable beyond this machine. Anyone who "
    "can reach it and holds the token can read every run and, unless --read-only, start "
    "processes as you. Prefer 127.0.0.1 and an SSH tunnel."
)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "serve", help="the local inspector: browse runs, compare two, open cells and lab "
        "evidence, launch keyless runs (http://127.0.0.1, token in the printed URL)")
    p.add_argument("root", nargs="?", type=Path, default=Path("reports"),
                   help="the output root to show (default: reports/); launched runs are "
                   "written under it")
    p.add_argument("--port", type=int, default=DEFAULT_PORT,
                   help=f"port to listen on (default {DEFAULT_PORT}; 0: any free port)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1; another one is warned "
                   "about)")
    p.add_argument("--history", help="the run history to read (default: $SABOT_HISTORY, "
                   "else ROOT/history.sqlite)")
    p.add_argument("--read-only", action="store_true",
                   help="browse only: nothing can be launched")
    p.add_argument("--allow-live", action="store_true",
                   help="allow launching a wave slice on a live model (a key in the "
                   "environment; it spends money)")
    p.add_argument("--trust-local-agent", action="store_true",
                   help="allow launching a lab scenario with your own package.module:"
                   "callable agent (your code, in a supervised child process)")


def config_of(args: argparse.Namespace) -> ServeConfig:
    """The server's settings from its arguments (the port is bound later)."""
    import os

    from pytest_sabot.core.paths import standard_root
    from pytest_sabot.history import HISTORY_ENV, HISTORY_FILE
    from pytest_sabot.web import ServeConfig

    root = Path(args.root).resolve()
    history = Path(args.history or os.environ.get(HISTORY_ENV) or root / HISTORY_FILE)
    return ServeConfig(
        root=root, history=history.resolve(), standard=standard_root(
            getattr(args, "sabot_root", None)),
        project=Path.cwd().resolve(), host=args.host, port=args.port,
        read_only=args.read_only, allow_live=args.allow_live,
        trust_local_agent=args.trust_local_agent,
    )


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` and already listening, so that the URL printed
    next answers at once: a connection made before uvicorn's loop starts waits in the
    backlog instead of being refused. uvicorn serves on this socket as it is."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(BACKLOG)
    except OSError:
        sock.close()
        raise
    return sock


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from pytest_sabot.web import create_app
    from pytest_sabot.web.config import is_loopback
    from pytest_sabot.web.views import opening_path, opening_words

    if not Path(args.root).is_dir():
        return fail("sabot serve", f"{args.root}: no such directory (run a wave first: "
                    "pytest --sabot-wave=1 -n auto, which writes reports/)")
    if not is_loopback(args.host):
        print(HOST_WARNING.format(host=args.host), file=sys.stderr)
    try:
        sock = listening_socket(args.host, args.port)
    except OSError as exc:
        return fail("sabot serve", f"cannot listen on {args.host}:{args.port}: {exc}")
    args.port = sock.getsockname()[1]
    config = config_of(args)
    server = uvicorn.Server(uvicorn.Config(create_app(config), log_level="warning",
                                           lifespan="on"))
    stopped = _quiet_stop(server)  # from here on, Ctrl-C stops it cleanly
    newest = _newest_run(config.history)
    print(f"Sabot inspector on {config.root}: open\n\n    "
          f"{config.url(opening_path(newest))}\n", flush=True)
    print(f"({opening_words(newest)}; the token in the URL is this server's; Ctrl-C stops "
          "it)", flush=True)
    server.run(sockets=[sock])
    print(f"sabot serve: stopped ({stopped[-1] if stopped else 'shut down'})", flush=True)
    return EXIT_PASS


def _newest_run(history: Path) -> RunSummary | None:
    """The run the history recorded last (None: no history, no run, or a history that
    cannot be read now; the runs list then says why)."""
    from pytest_sabot.history import HistoryError, list_runs

    if not history.is_file():
        return None
    try:
        runs = list_runs(history, limit=1, timeout=2.0)
    except HistoryError:
        return None
    return runs[0] if runs else None


def _quiet_stop(server: uvicorn.Server) -> list[str]:
    """Make Ctrl-C and SIGTERM end the server with exit 0 and one line. uvicorn catches
    both while it serves, shuts down (the lifespan stops every launched run), restores the
    handlers it found and raises the signal again: the handlers installed here are the
    ones it finds, so that signal is noted instead of a traceback (SIGINT) or a death by
    signal (SIGTERM); one that comes before uvicorn listens stops it as soon as it has
    started. Returns the names of the signals noted."""
    import signal

    noted: list[str] = []

    def note(number: int, _frame: object) -> None:
        noted.append(signal.Signals(number).name)
        server.should_exit = True

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, note)
    return noted
