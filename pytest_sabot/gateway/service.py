"""The gateway's state and decisions, without HTTP: runs, call counters, the O4 swap,
backends, spend and recordings. All of it lives in the one process that owns the gateway
(each xdist worker owns its own); spend is also kept in the project's ledger, which every
gateway of every process charges.

A run is known by two names: the caller's label (e.g. ``<cell id>~a1``, recorded with each
exchange) and the run key the gateway draws at registration (unguessable, returned only to
the caller that registered it). Calls, drains and closes name the run key, so a process
that can guess labels still cannot reach another session's runs."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from pytest_sabot.core.errors import SabotDataError
from pytest_sabot.gateway.accounts import SessionAccount, check_ledger_dir
from pytest_sabot.gateway.backends import (
    BACKENDS,
    Backend,
    BackendError,
    BackendReply,
    CallContext,
    is_live,
    records,
    replays,
)
from pytest_sabot.gateway.budget import Budget
from pytest_sabot.gateway.ledger import Ledger
from pytest_sabot.gateway.limiter import AdaptiveLimit
from pytest_sabot.gateway.prices import PriceTable, load_prices
from pytest_sabot.gateway.protocol import (
    ChatRequest,
    ExchangeRecord,
    GatewayStats,
    RecordedExchange,
    RunGrant,
    RunGranted,
    RunRegistered,
    RunRegistration,
    SessionRegistered,
    SessionRegistration,
    encode_body,
    error_body,
    request_hash,
)
from pytest_sabot.gateway.recording import Recorder
from pytest_sabot.gateway.routing import ModelSpec, downgrade_spec, parse_model
from pytest_sabot.gateway.secrets import Scrubber, new_run_key, redact_in_logs
from pytest_sabot.gateway.settings import GatewaySettings
from pytest_sabot.gateway.slots import SharedSlots, usable
from pytest_sabot.gateway.sse import completion_to_sse

SCOPED_PATH = "/v1"
"""The scoped door: a pipeline outside the harness calls ``<origin>/v1/chat/completions``
with its run's credential as the bearer token; the URL names neither the session secret
nor the run nor the cell."""
SCOPED_PREFIX = "sabot-run-"
"""Credentials start with this (and 32 characters): recognisable in a log, never guessable."""

# Never echoes the key it was given: an error text may end up in a trace.
_UNKNOWN_RUN = "unknown run: not registered at this gateway, or already closed"
RUNAWAY_CODE = "sabot_runaway"
"""The error code of a call past its run's model-call cap (SPEC I152)."""


class ControlError(Exception):
    """A control-API request that cannot be honoured (carried as an OpenAI-shaped error)."""

    def __init__(self, status: int, message: str, code: str, param: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.body = error_body(message, "invalid_request_error", code, param)


_M = TypeVar("_M", bound=BaseModel)


def _body(model: type[_M], raw: Any, what: str, code: str) -> _M:
    """A control-API request body read as ``model``; a 400 naming its first bad field."""
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        param = ".".join(str(p) for p in first.get("loc", ()))
        raise ControlError(400, f"{what}: {param}: {first['msg']}", code, param) from exc


@dataclass
class Served:
    """What the HTTP layer writes back."""

    status: int
    body: bytes
    content_type: str = "application/json"


@dataclass
class _Run:
    key: str
    reg: RunRegistration
    spec: ModelSpec
    swap: ModelSpec | None
    record: bool
    account: SessionAccount | None = None
    counters: dict[str, int] = field(default_factory=dict)
    pending: list[ExchangeRecord] = field(default_factory=list)


def _json_error(status: int, body: dict[str, Any]) -> Served:
    return Served(status, encode_body(body))


def _swapped(run: _Run, agent: str, index: int) -> bool:
    """Whether the O4 plan serves this call (the planned agent, from the planned call on)."""
    plan = run.reg.downgrade
    return (
        run.swap is not None
        and plan is not None
        and plan.agent == agent
        and index >= plan.from_call
    )


def _runaway(cap: int | None) -> BackendError:
    """The answer to a call past the run's model-call cap: never sent to a backend."""
    return BackendError(
        403,  # a status no client retries: the loop ends at its next call
        f"runaway: the run made more than {cap} model calls (--sabot-max-model-calls); "
        "every further call is refused",
        RUNAWAY_CODE,
    )


def _text_of(response: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    choices = response.get("choices") or []
    first = choices[0] if choices and isinstance(choices[0], dict) else {}
    message = first.get("message") or {}
    content = message.get("content")
    calls = message.get("tool_calls") or []
    return (content if isinstance(content, str) else ""), [c for c in calls if isinstance(c, dict)]


def shared_slots(settings: GatewaySettings) -> SharedSlots | None:
    """The session's shared connection budget, when the settings name one this process can
    use (gateway/slots.py); None otherwise: the gateway's own limit is then the only one."""
    if not usable(settings.slots_dir):
        return None
    assert settings.slots_dir is not None
    return SharedSlots(settings.slots_dir, settings.max_connections)


class GatewayService:
    def __init__(
        self,
        settings: GatewaySettings,
        backends: Mapping[str, Backend] | None = None,
        secret: str | None = None,
    ) -> None:
        self.settings = settings
        self.prices: PriceTable = load_prices(settings.prices_path)
        self.scrubber = Scrubber([secret] if secret else None)
        ledger = (
            Ledger(settings.spend_ledger_dir, settings.session)
            if settings.spend_ledger_dir
            else None
        )
        self.budget = Budget(settings.budget_usd, ledger)
        self.slots = shared_slots(settings)
        self.limit = AdaptiveLimit(
            settings.max_connections, settings.recover_after, shared=self.slots
        )
        # Backends given here serve their scheme as they are; every other scheme is made
        # from the registry (pytest_sabot.gateway.backends) when a run first names it.
        self._backends: dict[str, Backend] = dict(backends or {})
        self.recorder = Recorder(settings.record_dir) if settings.record_dir else None
        self._lock = threading.Lock()
        self._runs: dict[str, _Run] = {}  # by run key
        self._labels: dict[str, str] = {}  # label -> run key, for runs open or registering
        self._accounts: dict[str, SessionAccount] = {}  # by account key
        self._grants: dict[str, tuple[str, str]] = {}  # credential -> (run key, agent)
        self._sessions: dict[str, str] = {}  # session run id -> account key
        self._calls = 0
        self._fixture_calls = 0
        self._errors = 0

    def close(self) -> None:
        if self.recorder is not None:
            self.recorder.close_all()
        if self.slots is not None:
            self.slots.close()
        with self._lock:
            made = list(self._backends.values())
        for backend in made:
            close = getattr(backend, "close", None)
            if callable(close):
                close()

    def backend(self, scheme: str) -> Backend | None:
        """The backend serving a scheme, made from the registry on first use (None when
        no backend is registered for it)."""
        with self._lock:
            if scheme not in self._backends:
                if scheme not in BACKENDS:
                    return None
                self._backends[scheme] = BACKENDS.load(scheme)(self)
            return self._backends[scheme]

    def _known_schemes(self) -> list[str]:
        with self._lock:
            return sorted({*BACKENDS.names(), *self._backends})

    # ------------------------------------------------------------------ control API

    def _check_spec(self, spec: ModelSpec, field_name: str) -> None:
        backend = self.backend(spec.scheme)
        if backend is None:
            raise ControlError(
                400,
                f"model {spec.text!r}: unknown backend {spec.scheme!r} "
                f"(known: {', '.join(self._known_schemes())})",
                "sabot_unknown_model",
                field_name,
            )
        check = getattr(backend, "check", None)
        if callable(check):
            try:
                check(spec.name)
            except BackendError as exc:
                raise ControlError(exc.status, exc.message, exc.code, field_name) from exc
            except ValueError as exc:
                raise ControlError(400, str(exc), "sabot_unknown_model", field_name) from exc
        if is_live(backend):
            if not self.settings.allow_live:
                raise ControlError(
                    403,
                    f"model {spec.text!r} is a live upstream; live use is off (opt in explicitly)",
                    "sabot_live_not_enabled",
                    field_name,
                )
            if self.prices.price(spec.name) is None:
                raise ControlError(
                    400,
                    f"model {spec.name!r} has no price in the price table; a live run cannot "
                    "be budgeted without one",
                    "sabot_unpriced_model",
                    field_name,
                )

    def register_session(self, raw: Any) -> dict[str, Any]:
        """Open (or find again) the account of a session's own cap."""
        reg = _body(SessionRegistration, raw, "session registration", "invalid_registration")
        try:
            problem = check_ledger_dir(reg)
        except SabotDataError as exc:
            raise ControlError(400, str(exc), "sabot_bad_ledger", "spend_ledger") from exc
        if problem is not None:
            raise ControlError(400, problem, "sabot_bad_ledger", "spend_ledger")
        with self._lock:
            known = self._sessions.get(reg.session)
            if known is not None:
                account = self._accounts[known]
                if not account.matches(reg):
                    raise ControlError(
                        409,
                        f"session {reg.session!r} is registered with another cap or ledger",
                        "sabot_session_exists",
                        "session",
                    )
            else:
                account = SessionAccount(new_run_key(), reg, self.budget)
                self._accounts[account.key] = account
                self._sessions[reg.session] = account.key
        return SessionRegistered(
            account=account.key, session=reg.session, budget=account.state()
        ).model_dump(mode="json")

    def _account(self, key: str) -> SessionAccount:
        with self._lock:
            account = self._accounts.get(key)
        if account is None:
            raise ControlError(
                404, "unknown session account: not registered at this gateway",
                "sabot_unknown_account", "account",
            )
        return account

    def session_stats(self, key: str) -> GatewayStats:
        """A session account's part of the gateway's stats: its runs' calls and its cap."""
        account = self._account(key)
        with self._lock:
            counts = account.counts
            open_runs = sum(1 for run in self._runs.values() if run.account is account)
            return GatewayStats(
                calls=counts.calls,
                upstream_calls=counts.upstream_calls,
                upstream_retries=counts.upstream_retries,
                fixture_calls=counts.fixture_calls,
                errors=counts.errors,
                runs_open=open_runs,
                concurrency_limit=self.limit.limit,
                budget=account.state(),
            )

    def register_run(self, raw: Any) -> dict[str, Any]:
        """Register a run, all or nothing: a refused registration leaves no run, no label
        and no recording behind."""
        reg = _body(RunRegistration, raw, "run registration", "invalid_registration")
        try:
            spec = parse_model(reg.model)
        except ValueError as exc:
            raise ControlError(400, str(exc), "sabot_unknown_model", "model") from exc
        self._check_spec(spec, "model")
        account = self._account(reg.account) if reg.account is not None else None
        backend = self.backend(spec.scheme)
        try:
            # A replay knows itself which of its calls were downgraded.
            swap = (
                downgrade_spec(spec, reg.downgrade)
                if reg.downgrade and not replays(backend)
                else None
            )
        except ValueError as exc:
            raise ControlError(400, str(exc), "sabot_unknown_model", "model") from exc
        if swap is not None:
            self._check_spec(swap, "downgrade.model")
        record = records(backend) and self.recorder is not None
        key = new_run_key()
        with self._lock:
            if reg.label in self._labels:
                raise ControlError(
                    409, f"run {reg.label!r} is already registered", "sabot_run_exists", "label"
                )
            self._labels[reg.label] = key  # held while the recording is opened
        try:
            if record and self.recorder is not None:
                self.recorder.open_run(key, reg.cell_id)
        except SabotDataError as exc:
            self._forget_label(reg.label)
            raise ControlError(400, str(exc), "invalid_registration", "cell_id") from exc
        except OSError as exc:
            self._forget_label(reg.label)
            raise ControlError(
                500,
                f"run registration: the recording of cell {reg.cell_id} could not be opened: "
                f"{exc}",
                "sabot_recording_failed",
            ) from exc
        with self._lock:
            self._runs[key] = _Run(key, reg, spec, swap, record, account)
        return RunRegistered(
            run_key=key,
            label=reg.label,
            model=spec.text,
            downgrade_model=swap.text if swap else None,
            recording=record,
        ).model_dump(mode="json")

    def _forget_label(self, label: str) -> None:
        with self._lock:
            self._labels.pop(label, None)

    def key_of(self, label: str) -> str | None:
        """The run key of an open run, by its label (for the process that owns the gateway)."""
        with self._lock:
            return self._labels.get(label)

    def drain(self, run_key: str) -> list[dict[str, Any]]:
        with self._lock:
            run = self._runs.get(run_key)
            if run is None:
                raise ControlError(404, _UNKNOWN_RUN, "sabot_unknown_run")
            out, run.pending = run.pending, []
        return [r.model_dump(mode="json") for r in out]

    def grant(self, run_key: str, raw: Any) -> dict[str, Any]:
        """A credential for one agent of an open run: it opens that run's chat completions
        and model list at the scoped door (``/v1``) and nothing else; closing the run ends
        it. Asked by the run's registrant (the control API), handed to a pipeline outside
        the harness instead of the session secret."""
        wanted = _body(RunGrant, raw, "grant", "invalid_grant")
        token = SCOPED_PREFIX + new_run_key()
        with self._lock:
            if run_key not in self._runs:
                raise ControlError(404, _UNKNOWN_RUN, "sabot_unknown_run")
            self._grants[token] = (run_key, wanted.agent)
        self.scrubber.add(token)
        redact_in_logs(token)
        return RunGranted(api_key=token, base_path=SCOPED_PATH).model_dump(mode="json")

    def granted(self, token: str | None) -> tuple[str, str] | None:
        """(run key, agent) a scoped credential opens, None for anything else."""
        if not token:
            return None
        with self._lock:
            return self._grants.get(token)

    def close_run(self, run_key: str) -> list[dict[str, Any]]:
        """Forget the run (and end its credentials); returns the exchanges not drained yet."""
        with self._lock:
            run = self._runs.pop(run_key, None)
            if run is not None and self._labels.get(run.reg.label) == run_key:
                del self._labels[run.reg.label]
            for token in [t for t, (key, _) in self._grants.items() if key == run_key]:
                del self._grants[token]
        if run is None:
            raise ControlError(404, _UNKNOWN_RUN, "sabot_unknown_run")
        if run.record and self.recorder is not None:
            self.recorder.close_run(run_key)
        return [r.model_dump(mode="json") for r in run.pending]

    def stats(self) -> GatewayStats:
        with self._lock:
            return GatewayStats(
                calls=self._calls,
                upstream_calls=sum(
                    getattr(b, "requests_sent", 0) for b in self._backends.values() if is_live(b)
                ),
                upstream_retries=sum(
                    getattr(b, "retries", 0) for b in self._backends.values() if is_live(b)
                ),
                fixture_calls=self._fixture_calls,
                errors=self._errors,
                runs_open=len(self._runs),
                concurrency_limit=self.limit.limit,
                budget=self.budget.state(),
            )

    def models(self, run_key: str) -> dict[str, Any]:
        with self._lock:
            run = self._runs.get(run_key)
        if run is None:
            raise ControlError(404, _UNKNOWN_RUN, "sabot_unknown_run")
        return {
            "object": "list",
            "data": [{"id": run.spec.name, "object": "model", "created": 0, "owned_by": "sabot"}],
        }

    # ------------------------------------------------------------------ completions

    def chat(self, run_key: str, agent: str, raw_body: bytes, auth: str | None) -> Served:
        """Answer one chat completion; never raises."""
        started = time.perf_counter()
        if auth:
            self.scrubber.learn(auth.removeprefix("Bearer ").strip())
        parsed = self._parse(raw_body)
        if isinstance(parsed, Served):
            return parsed
        body, request = parsed
        with self._lock:
            run = self._runs.get(run_key)
            if run is None:
                self._errors += 1
                return _json_error(
                    404, error_body(_UNKNOWN_RUN, "invalid_request_error", "sabot_unknown_run")
                )
            index = run.counters.get(agent, 0)
            run.counters[agent] = index + 1
            over = run.reg.max_calls is not None and sum(run.counters.values()) > (
                run.reg.max_calls
            )
        swapped = _swapped(run, agent, index)
        spec = run.swap if swapped and run.swap is not None else run.spec
        clean: dict[str, Any] = self.scrubber.value(body)
        call = CallContext(
            run_key=run.reg.label,  # backends see the label: the embedded model seeds on it
            cell_id=run.reg.cell_id,
            seed=run.reg.seed,
            agent=agent,
            call_index=index,
            model=spec.text,
            name=spec.name,
            account=run.account,
        )
        # Backends get the request as sent; replay compares with the scrubbed form it recorded.
        backend = self.backend(spec.scheme)
        outcome = (
            _runaway(run.reg.max_calls)
            if over
            else self._complete(backend, spec, clean if replays(backend) else body, call)
        )
        record = ExchangeRecord(
            run_key=run.reg.label,
            cell_id=run.reg.cell_id,
            agent=agent,
            call_index=index,
            model_requested=request.model,
            model_served=spec.text,
            downgraded=swapped,
            stream=request.wants_stream,
            request_hash=request_hash(clean),
        )
        if isinstance(outcome, BackendReply):
            served, saved = self._success(outcome, request, record, clean)
        else:
            served, saved = self._failure(outcome, record, clean)
        latency = round((time.perf_counter() - started) * 1000.0, 3)
        saved.record.latency_ms = latency
        with self._lock:
            self._calls += 1
            if isinstance(outcome, BackendReply) and outcome.fixture:
                self._fixture_calls += 1
            if isinstance(outcome, BackendError):
                self._errors += 1
            if self._runs.get(run_key) is run:
                run.pending.append(saved.record)
        if run.account is not None:
            run.account.answered(
                fixture=isinstance(outcome, BackendReply) and outcome.fixture,
                error=isinstance(outcome, BackendError),
            )
        if run.record and self.recorder is not None:
            self.recorder.append(run_key, saved)
        return served

    def _parse(self, raw_body: bytes) -> tuple[dict[str, Any], ChatRequest] | Served:
        try:
            body = json.loads(raw_body)
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
            return self._reject(400, f"request body is not valid JSON: {exc}", "invalid_json")
        if not isinstance(body, dict):
            return self._reject(400, "request body must be a JSON object", "invalid_json")
        try:
            return body, ChatRequest.model_validate(body)
        except ValidationError as exc:
            first = exc.errors()[0]
            param = ".".join(str(p) for p in first.get("loc", ())) or None
            return self._reject(
                400,
                f"invalid chat completion request: {param}: {first['msg']}",
                "invalid_request",
                param,
            )

    def _complete(
        self, backend: Backend | None, spec: ModelSpec, body: dict[str, Any], call: CallContext
    ) -> BackendReply | BackendError:
        try:
            if backend is None:  # registered runs name known schemes; kept for safety
                raise BackendError(
                    400, f"unknown backend {spec.scheme!r}", "sabot_unknown_model"
                )
            return backend.complete(body, call)
        except BackendError as exc:
            return exc
        except Exception as exc:  # a backend bug must not take the server down
            return BackendError(
                500,
                f"backend {spec.scheme!r} failed: {type(exc).__name__}: {exc}",
                "sabot_backend_error",
            )

    def _success(
        self,
        reply: BackendReply,
        request: ChatRequest,
        record: ExchangeRecord,
        clean: dict[str, Any],
    ) -> tuple[Served, RecordedExchange]:
        response = dict(reply.response)  # only the top-level "model" is replaced
        response["model"] = request.model  # the swap leaves no trace in the response
        # A provider's fingerprint names the backend that served the call, so it differs
        # between the run's model and an O4 swap: it never reaches the pipeline.
        response.pop("system_fingerprint", None)
        response = self.scrubber.value(response)
        text, tool_calls = _text_of(response)
        record = record.model_copy(
            update={
                "model_served": reply.model_served or record.model_served,
                "downgraded": record.downgraded if reply.downgraded is None else reply.downgraded,
                "fixture": reply.fixture,
                "prompt_tokens": reply.usage.prompt_tokens,
                "completion_tokens": reply.usage.completion_tokens,
                "cached_tokens": reply.usage.cached_tokens,
                "reasoning_tokens": reply.usage.reasoning_tokens,
                "cost_usd": reply.cost_usd,
                "tool_calls": tool_calls,
                "response_text": text,
            }
        )
        if request.wants_stream:
            sse = completion_to_sse(response, request.include_usage)
            served = Served(200, sse, "text/event-stream")
        else:
            served = Served(200, encode_body(response))
        return served, RecordedExchange(record=record, request=clean, response=response)

    def _failure(
        self, failure: BackendError, record: ExchangeRecord, clean: dict[str, Any]
    ) -> tuple[Served, RecordedExchange]:
        err_body = self.scrubber.value(failure.body)
        record = record.model_copy(update={"error": self.scrubber.text(failure.message)})
        saved = RecordedExchange(
            record=record, request=clean, error_status=failure.status, error_body=err_body
        )
        return _json_error(failure.status, err_body), saved

    def _reject(self, status: int, message: str, code: str, param: str | None = None) -> Served:
        with self._lock:
            self._errors += 1
        return _json_error(status, error_body(message, "invalid_request_error", code, param))
