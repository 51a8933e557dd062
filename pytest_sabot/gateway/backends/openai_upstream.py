"""A live OpenAI-compatible upstream (``openai:<model>``): explicit opt-in, budget-capped.

The gateway is the only layer that retries (tenacity): 429 (except ``insufficient_quota``),
5xx, timeouts, dropped or reset connections and unparseable bodies are retried with
exponential backoff that honours ``retry-after-ms`` / ``Retry-After``; anything else is
passed through. Each call has one overall deadline (``upstream_deadline_s``) that covers
waiting for room under the spend cap and for a connection slot, every attempt and every
backoff: past it the call is answered 504, so a hung upstream is an error the pipeline sees
and the harness records, never a hung session. The deadline is checked between reads of a
response, and every read waits at most what is left of it.

The upstream is always asked for a whole completion; the gateway streams it to the client
itself, so what is recorded is exactly what is served and replayed.
"""

from __future__ import annotations

import email.utils
import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    stop_before_delay,
    wait_exponential,
)

from pytest_sabot.gateway.backends.base import (
    BackendError,
    BackendHost,
    BackendReply,
    CallContext,
    answered_error,
    is_completion,
    json_or_none,
    usage_of,
    whole_completion_request,
)
from pytest_sabot.gateway.budget import Budget, BudgetExhausted, Payer
from pytest_sabot.gateway.limiter import AdaptiveLimit, SlotTimeout
from pytest_sabot.gateway.prices import PriceTable
from pytest_sabot.gateway.secrets import Scrubber


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 6
    backoff_base_s: float = 0.5
    backoff_max_s: float = 30.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Wait before retry number ``attempt + 1``: the upstream's Retry-After when it gave
        one, else exponential from ``backoff_base_s``; never more than ``backoff_max_s``."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.backoff_max_s)
        exponential = wait_exponential(multiplier=self.backoff_base_s, max=self.backoff_max_s)
        return float(exponential(_AttemptNumber(attempt + 1)))  # type: ignore[arg-type]


@dataclass(frozen=True)
class _AttemptNumber:
    """The one field of tenacity's RetryCallState that its exponential wait reads."""

    attempt_number: int


class _Transient(Exception):
    """A failed attempt worth another one (until the attempts or the deadline run out)."""

    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after


def retry_after_seconds(headers: httpx.Headers) -> float | None:
    """Read ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return float(ms) / 1000.0
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (ValueError, TypeError):
        return None
    return max(parsed.timestamp() - time.time(), 0.0)


# Input tokens of one image part at most (a high-detail image of the largest size the
# provider accepts); an image's URL or base64 says nothing about its token count.
IMAGE_TOKENS = 6_000


def _image_parts(value: Any) -> int:
    if isinstance(value, dict):
        kind = value.get("type")
        own = 1 if kind in ("image_url", "input_image", "image") else 0
        return own + sum(_image_parts(v) for v in value.values())
    if isinstance(value, list):
        return sum(_image_parts(v) for v in value)
    return 0


def prompt_bound(body: dict[str, Any]) -> int:
    """An upper bound of the input tokens a request can be billed for, counted from the
    request itself: every token of text is at least one byte of it, and the JSON around
    each message, tool and schema is longer than the tokens the provider's chat format
    adds for them. Image parts are counted at ``IMAGE_TOKENS`` each."""
    size = len(json.dumps(body, ensure_ascii=False).encode("utf-8"))
    return size + IMAGE_TOKENS * _image_parts(body.get("messages"))


def _has_file_part(value: Any) -> bool:
    if isinstance(value, dict):
        return value.get("type") in ("file", "input_file") or any(
            _has_file_part(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_file_part(v) for v in value)
    return False


# The service tiers billed at (or below) the price table's rates; any other ("priority",
# "scale", a tier added later) is billed above them.
TABLE_TIERS = (None, "auto", "default", "flex")


def unbudgetable(body: dict[str, Any]) -> str | None:
    """What in a request makes its worst case unknowable from the request and the price
    table (None when nothing does): a call carrying it cannot be held against the cap."""
    tier = body.get("service_tier")
    if tier not in TABLE_TIERS:
        return f"service_tier={tier!r} (billed above the price table's rates)"
    modalities = body.get("modalities")
    if body.get("audio") is not None or (isinstance(modalities, list) and "audio" in modalities):
        return "audio output (billed apart from the table's text tokens)"
    if body.get("web_search_options") is not None:
        return "web_search_options (a search is billed per call, apart from tokens)"
    if _has_file_part(body.get("messages")):
        return "a file content part (the tokens of a file are not bounded by the request's size)"
    return None


def _is_quota_error(body: Any) -> bool:
    if not isinstance(body, dict) or not isinstance(body.get("error"), dict):
        return False
    err = body["error"]
    return "insufficient_quota" in (str(err.get("code")), str(err.get("type")))


def openai_backend(host: BackendHost) -> OpenAIUpstream:
    """The registry's factory of ``openai:<model>``: the gateway's upstream, its prices,
    spend cap, concurrency limit and secret scrubber."""
    settings = host.settings
    return OpenAIUpstream(
        base_url=settings.base_url,
        api_key_env=settings.api_key_env,
        prices=host.prices,
        budget=host.budget,
        limit=host.limit,
        scrubber=host.scrubber,
        policy=RetryPolicy(settings.max_retries, settings.backoff_base_s, settings.backoff_max_s),
        timeout_s=settings.upstream_timeout_s,
        deadline_s=settings.upstream_deadline_s,
        reserve_output_tokens=settings.reserve_output_tokens,
    )


@dataclass(kw_only=True, eq=False, repr=False)
class OpenAIUpstream:
    """Sends chat completions to ``base_url`` with the key read from the environment."""

    live = True

    base_url: str
    api_key_env: str
    prices: PriceTable
    budget: Budget
    limit: AdaptiveLimit
    scrubber: Scrubber
    policy: RetryPolicy
    timeout_s: float
    reserve_output_tokens: int
    deadline_s: float = 240.0
    sleep: Callable[[float], None] = time.sleep
    requests_sent: int = field(default=0, init=False)
    retries: int = field(default=0, init=False)
    _client: httpx.Client = field(init=False)
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.base_url = self.base_url.rstrip("/")
        self._client = httpx.Client(timeout=httpx.Timeout(self.timeout_s, connect=10.0))

    def close(self) -> None:
        self._client.close()

    def _key(self) -> str:
        key = os.environ.get(self.api_key_env, "")
        if not key:
            raise BackendError(
                401,
                f"no API key for the live upstream: environment variable {self.api_key_env} "
                "is empty",
                "sabot_no_api_key",
            )
        self.scrubber.add(key)
        return key

    def _set_output_limit(self, body: dict[str, Any], model: str) -> int:
        """The call's output limit: its own; else the model's (the price table's
        ``max_output_tokens``), else ``reserve_output_tokens``, which the call is then sent
        with (``max_completion_tokens``), so the provider keeps to the limit it is held at."""
        cap = body.get("max_completion_tokens") or body.get("max_tokens")
        if isinstance(cap, int) and not isinstance(cap, bool) and cap > 0:
            return cap
        output = self.prices.max_output(model) or self.reserve_output_tokens
        body["max_completion_tokens"] = output
        return output

    def _ceiling(self, body: dict[str, Any], model: str) -> float:
        """The worst case of one call: ``prompt_bound(body)`` input tokens plus the call's
        output limit (``_set_output_limit``) for each of the choices it asks for (``n``: the
        provider bills every choice's output)."""
        problem = unbudgetable(body)
        if problem is not None:
            raise BackendError(
                400, f"a live call with {problem} cannot be held against the spend cap; send "
                "it without that", "sabot_unbudgetable_request", "invalid_request_error",
            )
        output = self._set_output_limit(body, model)
        choices = 1 if body.get("n") is None else body["n"]
        if isinstance(choices, bool) or not isinstance(choices, int) or choices < 1:
            raise BackendError(
                400, f"n must be a positive whole number of choices, got {choices!r}",
                "invalid_request_error",
            )
        ceiling = self.prices.ceiling(model, prompt_bound(body), output * choices)
        if ceiling is None:
            raise BackendError(
                400, f"model {model!r} has no price in the price table", "sabot_unpriced_model"
            )
        return ceiling

    def _count_retry(self, state: RetryCallState, account: Any = None) -> None:
        if state.attempt_number > 1:
            with self._lock:
                self.retries += 1
            if account is not None:
                account.retried()

    def _wait(self, state: RetryCallState) -> float:
        failure = state.outcome.exception() if state.outcome is not None else None
        retry_after = failure.retry_after if isinstance(failure, _Transient) else None
        return self.policy.delay(state.attempt_number - 1, retry_after)

    def complete(self, request: dict[str, Any], call: CallContext) -> BackendReply:
        key = self._key()
        body = whole_completion_request(request, call.name)
        ceiling = self._ceiling(body, call.name)
        headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        deadline = time.monotonic() + self.deadline_s
        retrying = Retrying(
            stop=stop_after_attempt(self.policy.max_retries + 1)
            | stop_before_delay(self.deadline_s),
            wait=self._wait,
            before=lambda state: self._count_retry(state, call.account),
            retry=retry_if_exception_type(_Transient),
            sleep=self.sleep,
            reraise=True,
        )
        try:
            reply: BackendReply = retrying(self._attempt, body, headers, ceiling, call, deadline)
            return reply
        except _Transient as exc:
            attempts = retrying.statistics.get("attempt_number", 1)
            if time.monotonic() + self.policy.delay(attempts - 1, exc.retry_after) >= deadline:
                raise BackendError(
                    504,
                    f"upstream call passed its deadline of {self.deadline_s:g}s after "
                    f"{attempts} attempts; last: {exc.reason}",
                    "sabot_upstream_deadline",
                    "upstream_error",
                ) from None
            raise BackendError(
                502,
                f"upstream failed after {attempts} attempts; last: {exc.reason}",
                "sabot_upstream_unavailable",
                "upstream_error",
            ) from None

    def _post(
        self, body: dict[str, Any], headers: dict[str, str], deadline: float
    ) -> tuple[int, httpx.Headers, bytes]:
        """One request, read whole; ``_Transient`` when it fails on the way or the deadline
        passes between two reads."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise _Transient("the deadline passed before the request was sent")
        wait = min(self.timeout_s, remaining)
        timeout = httpx.Timeout(wait, connect=min(10.0, wait))
        url = f"{self.base_url}/chat/completions"
        try:
            with self._client.stream(
                "POST", url, json=body, headers=headers, timeout=timeout
            ) as response:
                chunks = []
                for chunk in response.iter_bytes():
                    chunks.append(chunk)
                    if time.monotonic() > deadline:
                        raise _Transient("the deadline passed while the answer was arriving")
                return response.status_code, response.headers, b"".join(chunks)
        except httpx.TimeoutException as exc:
            raise _Transient(f"timeout ({type(exc).__name__})") from None
        except httpx.RequestError as exc:
            raise _Transient(f"connection error ({type(exc).__name__}: {exc})") from None

    def _attempt(
        self,
        body: dict[str, Any],
        headers: dict[str, str],
        ceiling: float,
        call: CallContext,
        deadline: float,
    ) -> BackendReply:
        # A run of a session account is held against the session's cap and the gateway's
        # (gateway/accounts.py); any other against the gateway's.
        budget: Payer = call.account if call.account is not None else self.budget
        try:
            reservation = budget.reserve(
                ceiling, wait_s=max(0.0, deadline - time.monotonic())
            )
        except BudgetExhausted as exc:
            raise BackendError(
                402, f"sabot budget exhausted: {exc}", "sabot_budget_exhausted", "sabot_budget"
            ) from exc
        cost: float | None = None
        billable = True  # until the upstream says the call was refused
        try:
            try:
                with self.limit.slot(timeout=max(0.0, deadline - time.monotonic())) as generation:
                    with self._lock:
                        self.requests_sent += 1
                    if call.account is not None:
                        call.account.sent()
                    status, response_headers, content = self._post(body, headers, deadline)
            except SlotTimeout:
                billable = False
                raise _Transient(
                    "no upstream connection slot came free before the deadline"
                ) from None
            payload = json_or_none(content)
            if status == 200:
                if is_completion(payload):
                    usage = usage_of(payload)
                    cost = self.prices.cost(call.name, usage)
                    self.limit.succeeded()
                    return BackendReply(response=payload, usage=usage, cost_usd=cost)
                raise _Transient("200 with a body that is not a ChatCompletion JSON object")
            billable = False
            if status == 429 and _is_quota_error(payload):
                raise BackendError(
                    429, "upstream: insufficient_quota", "insufficient_quota", body=payload
                )
            if status == 429 or status >= 500 or status == 408:
                if status == 429:
                    self.limit.rate_limited(generation)
                raise _Transient(f"HTTP {status}", retry_after_seconds(response_headers))
            raise answered_error("upstream", status, payload, content.decode("utf-8", "replace"))
        finally:
            # A call the upstream may have done (and billed) without a usable answer keeps
            # its worst case charged as unknown; one it refused releases it.
            if billable:
                budget.settle(reservation, cost)
            else:
                budget.release(reservation)
