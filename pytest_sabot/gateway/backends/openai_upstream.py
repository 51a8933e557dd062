"""A live OpenAI-compatible upstream (``openai:<model>``): explicit opt-in, budget-capped.

The gateway is the only layer that retries: 429 (except ``insufficient_quota``), 5xx,
timeouts, dropped connections and unparseable bodies are retried with exponential backoff
that honours ``retry-after-ms`` / ``Retry-After``; anything else is passed through. The
upstream is always asked for a whole completion; the gateway streams it to the client
itself, so what is recorded is exactly what is served and replayed.
"""

from __future__ import annotations

import email.utils
import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from pytest_sabot.gateway.backends.base import BackendError, BackendReply, CallContext, usage_of
from pytest_sabot.gateway.budget import Budget, BudgetExhausted
from pytest_sabot.gateway.limiter import AdaptiveLimit
from pytest_sabot.gateway.prices import PriceTable
from pytest_sabot.gateway.protocol import error_body
from pytest_sabot.gateway.secrets import Scrubber

_DROPPED_FIELDS = ("stream", "stream_options")


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 6
    backoff_base_s: float = 0.5
    backoff_max_s: float = 30.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.backoff_max_s)
        return float(min(self.backoff_base_s * (2**attempt), self.backoff_max_s))


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


def _is_quota_error(body: Any) -> bool:
    if not isinstance(body, dict) or not isinstance(body.get("error"), dict):
        return False
    err = body["error"]
    return "insufficient_quota" in (str(err.get("code")), str(err.get("type")))


def _json_or_none(response: httpx.Response) -> Any:
    try:
        return response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None


class OpenAIUpstream:
    """Sends chat completions to ``base_url`` with the key read from the environment."""

    def __init__(
        self,
        *,
        base_url: str,
        api_key_env: str,
        prices: PriceTable,
        budget: Budget,
        limit: AdaptiveLimit,
        scrubber: Scrubber,
        policy: RetryPolicy,
        timeout_s: float,
        reserve_output_tokens: int,
        deadline_s: float = 240.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env
        self.prices = prices
        self.budget = budget
        self.limit = limit
        self.scrubber = scrubber
        self.policy = policy
        self.reserve_output_tokens = reserve_output_tokens
        self.deadline_s = deadline_s
        self._sleep = sleep
        self._client = httpx.Client(timeout=httpx.Timeout(timeout_s, connect=10.0))
        self._lock = threading.Lock()
        self.requests_sent = 0
        self.retries = 0

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

    def _ceiling(self, body: dict[str, Any], model: str) -> float:
        """The worst case of one call: ``prompt_bound(body)`` input tokens plus the call's
        output limit (its own, else the model's, else ``reserve_output_tokens``)."""
        cap = body.get("max_completion_tokens") or body.get("max_tokens")
        if isinstance(cap, int) and cap > 0:
            output = cap
        else:
            output = self.prices.max_output(model) or self.reserve_output_tokens
        ceiling = self.prices.ceiling(model, prompt_bound(body), output)
        if ceiling is None:
            raise BackendError(
                400, f"model {model!r} has no price in the price table", "sabot_unpriced_model"
            )
        return ceiling

    def _backoff(self, attempt: int, retry_after: float | None) -> None:
        if attempt < self.policy.max_retries:
            self._sleep(self.policy.delay(attempt, retry_after))

    def complete(self, request: dict[str, Any], call: CallContext) -> BackendReply:
        key = self._key()
        body = {k: v for k, v in request.items() if k not in _DROPPED_FIELDS}
        body["model"] = call.name
        ceiling = self._ceiling(body, call.name)
        headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        url = f"{self.base_url}/chat/completions"
        last = "no attempt made"
        for attempt in range(self.policy.max_retries + 1):
            if attempt:
                with self._lock:
                    self.retries += 1
            try:
                reservation = self.budget.reserve(ceiling, wait_s=self.deadline_s)
            except BudgetExhausted as exc:
                raise BackendError(
                    402, f"sabot budget exhausted: {exc}", "sabot_budget_exhausted", "sabot_budget"
                ) from exc
            with self.limit.slot() as generation:
                with self._lock:
                    self.requests_sent += 1
                try:
                    response: httpx.Response | None = self._client.post(
                        url, json=body, headers=headers
                    )
                    dropped = ""
                except httpx.TimeoutException as exc:
                    response, dropped = None, f"timeout ({type(exc).__name__})"
                except httpx.RequestError as exc:
                    response, dropped = None, f"connection error ({type(exc).__name__}: {exc})"
            if response is None:
                # The upstream may have done (and billed) the work before the answer was
                # lost, so the cost is unknown and its ceiling stays held.
                self.budget.settle(reservation, None)
                last = dropped
                self._backoff(attempt, None)
                continue
            status = response.status_code
            payload = _json_or_none(response)
            if status == 200:
                if isinstance(payload, dict) and isinstance(payload.get("choices"), list):
                    usage = usage_of(payload)
                    cost = self.prices.cost(call.name, usage)
                    self.budget.settle(reservation, cost)
                    self.limit.succeeded()
                    return BackendReply(response=payload, usage=usage, cost_usd=cost)
                self.budget.settle(reservation, None)
                last = "200 with a body that is not a ChatCompletion JSON object"
                self._backoff(attempt, None)
                continue
            self.budget.release(reservation)
            if status == 429 and _is_quota_error(payload):
                raise BackendError(
                    429, "upstream: insufficient_quota", "insufficient_quota", body=payload
                )
            if status == 429 or status >= 500 or status == 408:
                if status == 429:
                    self.limit.rate_limited(generation)
                retry_after = retry_after_seconds(response.headers)
                last = f"HTTP {status}"
                self._backoff(attempt, retry_after)
                continue
            passed = payload if isinstance(payload, dict) and "error" in payload else None
            if passed is None:
                passed = error_body(
                    f"upstream answered HTTP {status}: {response.text[:300]}",
                    "upstream_error",
                    f"upstream_{status}",
                )
            raise BackendError(status, f"upstream HTTP {status}", f"upstream_{status}", body=passed)
        raise BackendError(
            502,
            f"upstream failed after {self.policy.max_retries + 1} attempts; last: {last}",
            "sabot_upstream_unavailable",
            "upstream_error",
        )
