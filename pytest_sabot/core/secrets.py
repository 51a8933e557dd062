"""Known secrets, and how everything the harness writes is kept free of them.

A process learns its secrets as it runs: the provider key read from the environment, a
gateway's session secret (it travels inside every agent's base URL), a child's scoped
credential, every ``--sabot-secret-env NAME`` the user names. Each one is registered here
once (:func:`redact_in_logs`, re-exported by ``pytest_sabot.gateway.secrets``), and from then
on:

* every log record the process creates carries ``[REDACTED]`` in its place (HTTP libraries
  log request URLs) before any handler sees it;
* every file the harness writes is scrubbed by its writer (:func:`scrub_text`,
  :func:`scrub_value`): the trace writer, the atomic JSON and text writers (outcome.json,
  results.json, RESULTS.md, report.html, manifests, notes), the workspace the task tools
  write, the gateway's recordings, the supervisor's copy of an agent's log, the test reports
  that become JUnit XML. A pipeline that writes its endpoint and key into a tool argument, a
  handoff, a report line or its artifact leaves ``[REDACTED]`` in the record, never the
  secret (SPEC I106).

A secret is matched as it is and in the forms a writer would turn it into (JSON-escaped,
HTML/XML-escaped, percent-encoded). Values shorter than six characters are never registered:
they would scrub ordinary words. The gateway's own :class:`Scrubber` also removes key-shaped
strings (``Bearer ...``, ``sk-...``) from what it records of model traffic; the writers
remove the known secrets only, so a record's own words are never changed by a guess.
"""

from __future__ import annotations

import html
import json
import logging
import os
import re
import threading
import traceback
from typing import Any
from urllib.parse import quote

REDACTED = "[REDACTED]"

_PATTERNS = (
    re.compile(r"Bearer\s+[A-Za-z0-9._~+/=\-]+", re.IGNORECASE),
    re.compile(r"\bsk-[A-Za-z0-9_\-]{6,}"),
)
MIN_SECRET_LEN = 6
_MIN_LEARNED_LEN = 16


def _forms(secret: str) -> set[str]:
    """The secret and the forms a writer may turn it into."""
    forms = {
        secret,
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        html.escape(secret, quote=True),
        html.escape(secret, quote=False),
        quote(secret, safe=""),
    }
    return {f for f in forms if len(f) >= MIN_SECRET_LEN}


class _Known:
    """A thread-safe set of secrets with every form each one is matched in."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._secrets: set[str] = set()
        self._forms: tuple[str, ...] = ()

    def add(self, secret: str | None) -> bool:
        value = (secret or "").strip()
        if len(value) < MIN_SECRET_LEN:
            return False
        with self._lock:
            if value in self._secrets:
                return False
            self._secrets.add(value)
            forms = set(self._forms) | _forms(value)
            self._forms = tuple(sorted(forms, key=len, reverse=True))
        return True

    @property
    def forms(self) -> tuple[str, ...]:
        return self._forms

    def __bool__(self) -> bool:
        return bool(self._forms)


def _replace(text: str, forms: tuple[str, ...]) -> str:
    for form in forms:
        if form in text:
            text = text.replace(form, REDACTED)
    return text


def _walk(value: Any, text: Any) -> Any:
    if isinstance(value, str):
        return text(value)
    if isinstance(value, dict):
        return {text(k) if isinstance(k, str) else k: _walk(v, text) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_walk(v, text) for v in value)
    return value


# --------------------------------------------------------------------------- the process's

_KNOWN = _Known()
_LOG_LOCK = threading.Lock()
_LOG_INSTALLED = False


def known_secrets() -> bool:
    """Whether this process has registered any secret yet."""
    return bool(_KNOWN)


def scrub_text(text: str) -> str:
    """``text`` with every secret registered in this process replaced by [REDACTED]."""
    forms = _KNOWN.forms
    return _replace(text, forms) if forms else text


# The name the log redaction has always had.
redact_text = scrub_text


def scrub_bytes(data: bytes) -> bytes:
    """``data`` with the UTF-8 bytes of every registered secret's forms replaced (a file
    of any kind: text in any encoding that keeps ASCII, or binary holding such text)."""
    for form in _KNOWN.forms:
        raw = form.encode("utf-8")
        if raw in data:
            data = data.replace(raw, REDACTED.encode("utf-8"))
    return data


def scrub_name(name: str) -> str:
    """A file or folder name without the registered secrets: ``REDACTED`` in their place
    (no brackets, so a plain file name stays one)."""
    return scrub_text(name).replace(REDACTED, "REDACTED") if has_secret(name) else name


def has_secret(text: str) -> bool:
    return any(form in text for form in _KNOWN.forms)


def scrub_value(value: Any) -> Any:
    """Every string (keys and values) of a JSON-like value scrubbed; a value without a
    registered secret in it is returned as it is (the same object)."""
    if not _KNOWN:
        return value
    if isinstance(value, str):
        return scrub_text(value)
    try:
        dumped = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return _walk(value, scrub_text)
    return _walk(value, scrub_text) if has_secret(dumped) else value


_RECORD_TEXTS = ("name", "pathname", "filename", "module", "funcName", "threadName",
                 "processName", "taskName")


def _redacting_factory(previous: Any) -> Any:
    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record: logging.LogRecord = previous(*args, **kwargs)
        if not _KNOWN:
            return record
        try:
            message = record.getMessage()
        except Exception:  # a malformed record is logging's to report, not ours
            return record
        clean = scrub_text(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and record.exc_info[0] is not None:
            text = "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
            if scrub_text(text) != text:
                record.exc_text = scrub_text(text)
        if record.stack_info:
            record.stack_info = scrub_text(record.stack_info)
        # Where the record came from is printed too (a logger named after a key, a thread
        # given one as its name): every text field a format string can name.
        for name in _RECORD_TEXTS:
            value = getattr(record, name, None)
            if isinstance(value, str) and has_secret(value):
                setattr(record, name, scrub_text(value))
        return record

    return factory


def redact_in_logs(secret: str | None) -> None:
    """Register ``secret`` for this process: from now on it is kept out of every log
    record the process creates and of everything its writers write (idempotent; the log
    record factory is installed once per process)."""
    global _LOG_INSTALLED
    _KNOWN.add(secret)
    with _LOG_LOCK:
        if not _LOG_INSTALLED:
            logging.setLogRecordFactory(_redacting_factory(logging.getLogRecordFactory()))
            _LOG_INSTALLED = True


register = redact_in_logs
"""The same registration, under the name the writers' side uses."""

PROVIDER_KEYS = ("OPENAI_API_KEY",)
"""Environment variables whose values are secrets in every process that records, named or
not (a pytest session, ``sabot mcp``, the lab's MCP server)."""


def redact_provider_keys() -> None:
    """Register the provider keys this process's environment holds (those long enough to
    be told apart from ordinary words) as secrets."""
    for name in PROVIDER_KEYS:
        value = os.environ.get(name)
        if value and len(value.strip()) >= MIN_SECRET_LEN:
            redact_in_logs(value)


# --------------------------------------------------------------------------- a scrubber


class Scrubber:
    """Replaces known secrets and key-shaped strings; thread-safe, grows as keys are seen.
    It also replaces every secret registered in the process (:func:`redact_in_logs`)."""

    def __init__(self, known: list[str] | None = None) -> None:
        self._known = _Known()
        for value in known or []:
            self.add(value)

    def add(self, secret: str | None) -> None:
        """Remember one more secret (too-short values are ignored: they would over-match)."""
        self._known.add(secret)

    def learn(self, token: str | None) -> None:
        """Remember a bearer token a client presented, if it is long enough to be a key
        (short placeholder tokens would scrub ordinary words out of model traffic)."""
        if token and len(token.strip()) >= _MIN_LEARNED_LEN:
            self.add(token)

    def text(self, value: str) -> str:
        value = _replace(value, self._known.forms)
        value = scrub_text(value)
        for pattern in _PATTERNS:
            value = pattern.sub(REDACTED, value)
        return value

    def _has_secret(self, text: str) -> bool:
        return (
            any(form in text for form in self._known.forms)
            or has_secret(text)
            or any(pattern.search(text) for pattern in _PATTERNS)
        )

    def value(self, value: Any) -> Any:
        """Scrub every string (keys and values) inside a JSON-like value; a value without
        anything to scrub is returned as is."""
        if not isinstance(value, str) and not self._has_secret(
            json.dumps(value, ensure_ascii=False, default=str)
        ):
            return value
        return _walk(value, self.text)
