"""The session's model gateways: one in every process that runs cells, closed by the
config's cleanup (so it is closed however the session ends).

With pytest-xdist every worker starts its own gateway in its own process, with its own
session secret: the embedded model scales with the workers, and a worker needs nothing
from the controller but the selection. The controller starts one only when it runs cells
itself (no xdist, ``-n 0``, ``-p no:xdist``). Every gateway of a session charges the one
spend ledger of its output root under a file lock, so the cap is shared, and a cap that
refuses a call in one worker is seen by every other worker before its next cell (the
ledger records which session's gateway it stopped).

A gateway given with ``--sabot-gateway-url`` is shared, not owned: a live session
registers its own cap and ledger there (:func:`open_account`) before anything runs, and
every process of the session names that account in its runs, so the session's
``--sabot-budget-usd`` holds whichever gateway serves it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_sabot.session.settings import Settings

if TYPE_CHECKING:
    from pytest_sabot.gateway.client import GatewayClient
    from pytest_sabot.gateway.ledger import LedgerGateway
    from pytest_sabot.gateway.server import Gateway
    from pytest_sabot.gateway.settings import GatewaySettings

# A syntactically valid gateway URL the controller of a distributed session checks the
# judge's spec against: the judge runs in the workers, each on its own gateway.
WORKER_GATEWAYS_URL = "http://127.0.0.1:9/workers-start-their-own-gateways"


def distributed(config: pytest.Config) -> bool:
    """Whether pytest-xdist runs the cells of this session in workers (the controller
    then runs none). xdist's own test: a distribution mode and gateways to run it on."""
    if hasattr(config, "workerinput") or config.getoption("collectonly", False):
        return False
    if not config.pluginmanager.hasplugin("xdist"):
        return False
    return config.getoption("dist", "no") != "no" and bool(config.getoption("tx", None))


def settings_of(
    settings: Settings,
    out: Path,
    *,
    session: str = "",
    workdir: Path | None = None,
    share: int = 1,
    slots_dir: Path | None = None,
) -> GatewaySettings:
    """The GatewaySettings of a session's own gateway; a bad value is a usage error (so
    the controller refuses it before any worker starts)."""
    from pytest_sabot.core.errors import SabotDataError
    from pytest_sabot.gateway.settings import GatewaySettings

    try:
        return GatewaySettings.for_session(
            settings.model,
            out,
            base_url=settings.base_url,
            prices=settings.prices,
            budget_usd=settings.budget_usd,
            max_connections=settings.max_connections,
            spend_ledger=ledger_dir(settings, out),
            upstream_deadline_s=settings.upstream_deadline,
            sim_latency_s=settings.sim_latency or 0.0,
            session=session,
            workdir=workdir,
            share=share,
            slots_dir=slots_dir,
        )
    except (ValueError, SabotDataError) as exc:
        raise pytest.UsageError(f"pytest-sabot: {exc}") from None


def make_shared_budget(config: pytest.Config, settings: Settings) -> Path | None:
    """The controller of a distributed session: the directory of the connection budget its
    workers' gateways share (gateway/slots.py), removed when the session ends; None where
    the platform cannot share one (each worker then holds a fixed share) or the model
    holds no connections."""
    from pytest_sabot.gateway.slots import make_slots_dir, remove_slots_dir, usable

    if not settings.live and not (settings.model.is_sim and (settings.sim_latency or 0) > 0):
        return None
    try:
        directory = make_slots_dir(settings.max_connections)
    except OSError:
        return None
    if not usable(directory):
        remove_slots_dir(directory)
        return None
    config.add_cleanup(lambda: remove_slots_dir(directory))
    return directory


def spare_connections(gateway: Gateway) -> int:
    """The connections of the session's shared budget nobody holds now, 0 while a call of
    this gateway waits for a slot (its process has cells enough) or without a shared
    budget."""
    service = gateway.service
    if service.slots is None or service.limit.waiting > 0:
        return 0
    return service.slots.idle()


def worker_slots_dir(workerinput: dict[str, Any]) -> Path | None:
    """The session's shared budget as its controller made it (None when there is none or
    this worker cannot see it: a worker on another machine keeps a fixed share)."""
    given = workerinput.get("sabot_slots")
    if not given:
        return None
    path = Path(given)
    return path if path.is_dir() else None


def external_url(settings: Settings) -> str | None:
    """--sabot-gateway-url, checked (a usage error when it is malformed)."""
    if not settings.gateway_url:
        return None
    from pytest_sabot.gateway.client import split_gateway_url

    try:
        split_gateway_url(settings.gateway_url)
    except ValueError as exc:
        raise pytest.UsageError(f"pytest-sabot: --sabot-gateway-url: {exc}") from None
    return settings.gateway_url


def ledger_dir(settings: Settings, out: Path) -> Path:
    """The directory of the session's spend ledger (absolute): ``--sabot-spend-ledger``,
    else the output root of ``out``, where its run history is too (``reports/wave-1`` ->
    ``reports``; ``shard-2`` made in the working directory -> ``reports``, never a ledger
    of its own beside the project's)."""
    if settings.spend_ledger:
        return Path(settings.spend_ledger).resolve()
    from pytest_sabot.history.store import output_root_of

    return output_root_of(out)


def open_account(settings: Settings, url: str, out: Path, session: str) -> str:
    """A live session through a gateway it did not start: register the session's own cap
    and ledger there before anything runs (every process of the session does; the gateway
    answers each with the same account) and return the URL its clients use, which names the
    account. A gateway that cannot hold the cap is a usage error: nothing runs live through
    it. A keyless session spends nothing and keeps the URL as it is."""
    if not settings.live:
        return url
    from pytest_sabot.gateway.client import GatewayClient, GatewayError, with_account

    try:
        answer = GatewayClient(url).register_session(
            session, settings.budget_usd, str(ledger_dir(settings, out))
        )
    except GatewayError as exc:
        if exc.status in (404, 405) or exc.code == "unknown_route":
            why = (
                "it has no session accounts (a gateway older than this pytest-sabot), so it "
                f"cannot hold this session's --sabot-budget-usd={settings.budget_usd:g}"
            )
        else:
            why = f"it refused this session's spend cap: {exc.message}"
        raise pytest.UsageError(
            f"pytest-sabot: --sabot-gateway-url: {why}; start the gateway from this version "
            "(python -m pytest_sabot.gateway) or run without --sabot-gateway-url; nothing "
            "was run"
        ) from None
    return with_account(url, answer.account)


def start(config: pytest.Config, gateway_settings: GatewaySettings) -> tuple[Gateway, str]:
    """Start this process's gateway; (the gateway, its URL)."""
    from pytest_sabot.gateway import start_gateway

    gateway = start_gateway(gateway_settings)
    config.add_cleanup(gateway.close)
    return gateway, str(gateway.url)


def own_client(gateway: Gateway | None) -> GatewayClient | None:
    """The client of this process's own gateway, calling its control routes directly (no
    loopback HTTP for them); None where the process has no gateway of its own."""
    from pytest_sabot.gateway import GatewayClient

    return None if gateway is None else GatewayClient(gateway.url, service=gateway.service)


def worker_workdir(workerinput: dict[str, Any]) -> Path | None:
    """The directory the session was started in, when it exists here (a worker on the
    controller's machine); relative paths of the session's options are read from it."""
    given = workerinput.get("sabot_invocation_dir")
    if not given:
        return None
    path = Path(given)
    return path if path.is_dir() else None


def invocation_dir() -> str:
    return os.getcwd()


def stats(gateway: Gateway | None) -> dict[str, Any] | None:
    """One gateway's spend and call counts, JSON-able (None without an own gateway)."""
    if gateway is None:
        return None
    data: dict[str, Any] = gateway.service.stats().model_dump(mode="json")
    return data


_SUMMED = ("calls", "upstream_calls", "upstream_retries", "fixture_calls", "errors", "runs_open",
           "concurrency_limit")
_SUMMED_BUDGET = ("spent_usd", "reserved_usd", "unknown_cost_calls")


def combine(
    parts: list[dict[str, Any]], shared_connections: int | None = None
) -> dict[str, Any] | None:
    """The spend of a session from the stats of each of its gateways: counts and this
    session's spend summed (the concurrency limit too: the session's gateways together,
    at most ``shared_connections`` when they shared a budget of that many),
    the cap exhausted when any gateway's was, the project's figures from the last read of
    the shared ledger. ``gateways`` says how many were combined."""
    if not parts:
        return None
    if len(parts) == 1:
        return {**parts[0], "gateways": 1}
    out: dict[str, Any] = {key: sum(int(p.get(key, 0)) for p in parts) for key in _SUMMED}
    if shared_connections is not None:
        out["concurrency_limit"] = min(out["concurrency_limit"], shared_connections)
    budgets = [p["budget"] for p in parts]
    budget: dict[str, Any] = dict(budgets[-1])
    for key in _SUMMED_BUDGET:
        if key == "unknown_cost_calls":
            budget[key] = sum(int(b.get(key) or 0) for b in budgets)
        else:
            budget[key] = round(sum(float(b.get(key) or 0.0) for b in budgets), 10)
    budget["exhausted"] = any(b.get("exhausted") for b in budgets)
    for key in ("project_spent_usd", "project_committed_usd"):
        values = [b[key] for b in budgets if b.get(key) is not None]
        budget[key] = max(values) if values else None
    out["budget"] = budget
    out["gateways"] = len(parts)
    return out


def session_spend(
    gateway: Gateway | None,
    workers: dict[str, dict[str, Any]],
    shared_connections: int | None = None,
) -> dict[str, Any] | None:
    """The session's spend: its own gateway's (a process that ran cells) and every
    worker's that reported (a crashed worker reports none: its spend is in the ledger)."""
    parts = [s for s in (stats(gateway), *(workers[k] for k in sorted(workers))) if s]
    return combine(parts, shared_connections)


def account_spend(url: str | None) -> dict[str, Any] | None:
    """The spend of the session's account at a gateway given by URL (None when the URL
    names no account or the gateway cannot be asked)."""
    if not url:
        return None
    from pytest_sabot.gateway import GatewayClient

    client = GatewayClient(url)
    if client.account is None:
        return None
    try:
        data: dict[str, Any] = client.account_stats().model_dump(mode="json")
    except Exception:
        return None
    return {**data, "gateways": 1}


def ledger_spend(directory: Path, session: str) -> dict[str, Any] | None:
    """What the spend ledger holds for ``session`` (every gateway that charged it), when
    no gateway can tell: calls and spend only, ``from_ledger`` set."""
    from pytest_sabot.core.errors import SabotDataError
    from pytest_sabot.gateway.ledger import read_ledger

    try:
        ledger = read_ledger(directory)
    except SabotDataError:
        return None
    mine = [g for g in ledger.gateways.values() if g.session == session]
    if not mine:
        return None
    calls = sum(g.calls + g.unknown_calls for g in mine)
    return {
        "calls": calls,
        "upstream_calls": calls,
        "from_ledger": str(directory),
        "budget": {**_charged(mine), "exhausted": any(g.stopped for g in mine)},
    }


def _charged(gateways: list[LedgerGateway]) -> dict[str, Any]:
    """What the ledger's entries of a session's gateways charged, summed."""
    return {"spent_usd": round(sum(g.spent_usd for g in gateways), 10),
            "unknown_cost_calls": sum(g.unknown_calls for g in gateways)}


def with_ledger(spent: dict[str, Any], directory: Path, session: str) -> dict[str, Any]:
    """The session's spend as its gateways reported it, with the spend ledger's word where
    the ledger knows more: what every gateway of the session charged (a worker that crashed
    reports nothing, yet its settled calls are in the ledger) and the project's figures as
    the ledger holds them once the session's gateways are done (each worker's own last read
    may still count another worker's calls in flight)."""
    from pytest_sabot.core.errors import SabotDataError
    from pytest_sabot.gateway.ledger import read_ledger

    try:
        ledger = read_ledger(directory)
    except SabotDataError:
        return spent
    mine = [g for g in ledger.gateways.values() if g.session == session]
    budget = dict(spent.get("budget") or {})
    if mine:
        charged = _charged(mine)
        budget["spent_usd"] = max(float(budget.get("spent_usd") or 0.0), charged["spent_usd"])
        budget["unknown_cost_calls"] = max(int(budget.get("unknown_cost_calls") or 0),
                                           charged["unknown_cost_calls"])
    if "project_spent_usd" in budget:
        budget["project_spent_usd"] = round(ledger.spent_usd, 10)
        budget["project_committed_usd"] = round(ledger.committed_usd, 10)
    return {**spent, "budget": budget}


def budget_stopped(gateway: Gateway | None, settings: Settings, session: str) -> bool:
    """Whether the spend cap has stopped this session: this process's gateway refused a
    call, or the shared ledger says a gateway of this session did (another worker's). A
    gateway given by URL is asked over HTTP. False when it cannot be told."""
    if gateway is not None:
        if gateway.service.stats().budget.exhausted:
            return True
        directory = gateway.settings.spend_ledger_dir
        if directory is None:
            return False
        from pytest_sabot.core.errors import SabotDataError
        from pytest_sabot.gateway.ledger import session_stopped

        try:
            return session_stopped(Path(directory), session)
        except SabotDataError:
            return False
    return budget_exhausted_remote(settings.gateway_url)


def budget_exhausted_remote(url: str | None) -> bool:
    """Whether a gateway given by URL has refused a call of this session for budget (its
    account's cap or the gateway's own; asked over HTTP); False when it cannot be asked."""
    if not url:
        return False
    from pytest_sabot.gateway import GatewayClient

    client = GatewayClient(url)
    try:
        if client.account is not None:
            return bool(client.account_stats().budget.exhausted)
        return bool(client.stats().budget.exhausted)
    except Exception:
        return False
