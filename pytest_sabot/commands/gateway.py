"""A standalone gateway: ``python -m pytest_sabot.gateway [--port N] ...``.

Useful to share one gateway between several pytest sessions (``--sabot-gateway-url``) or
to poke at it with curl. Prints its URL once, ``http://127.0.0.1:<port>/<secret>``, and
serves until interrupted. The URL carries the gateway's session secret: every request must
present it (agent routes as the first path segment, control routes in the
``X-Sabot-Secret`` header), so treat the URL like a password. It is printed nowhere else.
"""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path

from pytest_sabot.commands.closed_stdout import guard_if_program
from pytest_sabot.core.exit_codes import EXIT_PASS


def main(argv: list[str] | None = None) -> int:
    """Serve until interrupted; exit 0 (argparse's 2 for bad options)."""
    guard_if_program(argv)
    from pytest_sabot.gateway.server import start_gateway
    from pytest_sabot.gateway.settings import GatewaySettings
    from pytest_sabot.trusted.harden import harden

    parser = argparse.ArgumentParser(prog="python -m pytest_sabot.gateway")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--base-url", default=None, help="upstream for 'openai:' runs")
    parser.add_argument("--allow-live", action="store_true", help="opt in to live upstreams")
    parser.add_argument(
        "--budget-usd", type=float, default=500.0, help="hard spend cap of the project (500)"
    )
    parser.add_argument("--prices", type=Path, default=None, help="price table YAML")
    parser.add_argument("--record-dir", type=Path, default=None, help="record live exchanges")
    parser.add_argument("--max-connections", type=int, default=8)
    parser.add_argument(
        "--spend-ledger",
        type=Path,
        default=Path("reports"),
        help="directory whose spend-ledger.json keeps the project's live spend across "
        "sessions (default: reports, the parent of the plugin's default output)",
    )
    parser.add_argument(
        "--upstream-deadline",
        type=float,
        default=240.0,
        help="overall deadline in seconds of one upstream call, retries included (240)",
    )
    parser.add_argument(
        "--sim-latency",
        type=float,
        default=0.0,
        help="median seconds of an embedded-model call (0: at once), a seeded lognormal",
    )
    args = parser.parse_args(argv)
    options: dict[str, object] = {
        "port": args.port,
        "allow_live": args.allow_live,
        "budget_usd": args.budget_usd,
        "prices_path": args.prices,
        "record_dir": args.record_dir,
        "max_connections": args.max_connections,
        "spend_ledger_dir": args.spend_ledger,
        "upstream_deadline_s": args.upstream_deadline,
        "sim_latency_s": args.sim_latency,
    }
    if args.base_url:
        options["base_url"] = args.base_url
    # Its environment holds the provider key and its memory the session secret: closed to
    # the other processes of this user (a pipeline under test among them), and its
    # arguments out of ps.
    harden()
    gateway = start_gateway(GatewaySettings.model_validate(options))
    print(gateway.url, flush=True)
    print(
        "pytest-sabot gateway: the line above is its URL with its session secret; give it to "
        "pytest as --sabot-gateway-url URL (for curl: the secret is the path segment after "
        "the port, sent as the X-Sabot-Secret header on /sabot/... routes). Anyone holding "
        "it can spend through this gateway.",
        file=sys.stderr,
        flush=True,
    )
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        gateway.close()
    return EXIT_PASS
