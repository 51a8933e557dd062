"""The secrets a session knows from its start, and the one writer the harness does not own:
pytest's test reports, which become the terminal's failure text and the JUnit XML.

Every process of a session (the controller and each xdist worker, which inherit the
environment) registers, before anything runs: the provider key (``OPENAI_API_KEY``) and the
value of every ``--sabot-secret-env NAME`` and of every ``--sabot-agent-env NAME`` (a
variable handed to a trusted agent's child, whose log the harness keeps; a value shorter
than six characters cannot be told from ordinary words and is not registered, SPEC I157).
The gateway registers its session secret when it
starts, a gateway client the secret of a gateway given by URL, the supervisor of a child the
credential it hands the child (:func:`pytest_sabot.gateway.secrets.redact_in_logs`), each in
the process that learns it (SPEC I106).

A test report is scrubbed in the process that ran the test, before it is sent anywhere (an
xdist worker's secrets are its own), and the JUnit XML file once more when the controller
ends, with the controller's. So is a warning (the summary's "warnings" section, where
pytest also puts an exception a thread left unhandled) as it is recorded, before the
terminal or an xdist worker's channel sees it.
"""

from __future__ import annotations

import contextlib
import os
import re
import warnings
from pathlib import Path
from typing import Any

import pytest

from pytest_sabot.core.secrets import (
    MIN_SECRET_LEN,
    has_secret,
    known_secrets,
    redact_in_logs,
    redact_provider_keys,
    scrub_text,
)
from pytest_sabot.core.trace_io import OutputUnwritable, write_text_atomic
from pytest_sabot.session.settings import Settings

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def register(settings: Settings) -> None:
    """Register this process's known secrets; a ``--sabot-secret-env`` that names nothing
    usable is a usage error (a secret it was meant to hide would reach the records)."""
    for name in settings.secret_env:
        flag = f"--sabot-secret-env={name}"
        if not _ENV_NAME.match(name):
            raise pytest.UsageError(
                f"pytest-sabot: {flag}: expected the name of an environment variable "
                "(letters, digits and underscores)"
            )
        value = os.environ.get(name)
        if not value:
            raise pytest.UsageError(
                f"pytest-sabot: {flag}: the environment variable {name} is not set, so "
                "there is no secret to keep out of the records (set it, or drop the option)"
            )
        if len(value.strip()) < MIN_SECRET_LEN:
            raise pytest.UsageError(
                f"pytest-sabot: {flag}: its value is shorter than {MIN_SECRET_LEN} "
                "characters; replacing it everywhere would change ordinary words"
            )
        redact_in_logs(value)
    for name in settings.agent_env:  # the names themselves are checked with the agent's row
        value = os.environ.get(name, "")
        if len(value.strip()) >= MIN_SECRET_LEN:
            redact_in_logs(value)
    redact_provider_keys()
    if settings.gateway_url:  # its secret is on the command line the manifest keeps
        from pytest_sabot.gateway.client import split_gateway_url

        # a malformed URL is refused, with its reason, when the gateway is reached
        with contextlib.suppress(ValueError):
            redact_in_logs(split_gateway_url(settings.gateway_url)[1])


def scrub_report(report: pytest.TestReport) -> None:
    """A test report without the process's secrets: its failure text, its captured output
    and its JUnit properties (what pytest prints and what the JUnit XML holds)."""
    if not known_secrets():
        return
    longrepr: Any = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:  # a skip: (path, line, reason)
        path, line, reason = longrepr
        report.longrepr = (path, line, scrub_text(str(reason)))
    elif longrepr is not None:
        text = str(longrepr)
        if has_secret(text):
            report.longrepr = scrub_text(text)
    report.sections = [(title, scrub_text(body)) for title, body in report.sections]
    report.user_properties = [
        (name, scrub_text(value) if isinstance(value, str) else value)
        for name, value in report.user_properties
    ]


def scrub_warning(record: warnings.WarningMessage) -> None:
    """A recorded warning without the process's secrets, in place: its message (kept of its
    own class where that class takes one text, else a UserWarning under its category), the
    file and source line shown beside it, and its category (a class named after a secret is
    shown as a UserWarning)."""
    if not known_secrets():
        return
    for name in ("line", "filename"):
        value = getattr(record, name, None)
        if isinstance(value, str) and has_secret(value):
            setattr(record, name, scrub_text(value))
    if has_secret(record.category.__name__) or has_secret(record.category.__module__):
        record.category = UserWarning
        record.message = UserWarning(scrub_text(str(record.message)))
        return
    text = str(record.message)
    if not has_secret(text):
        return
    clean = scrub_text(text)
    if not isinstance(record.message, Warning):
        record.message = clean
        return
    try:
        kept = type(record.message)(clean)
    except Exception:  # a warning class built from other arguments
        kept = UserWarning(clean)
    record.message = kept if str(kept) == clean else UserWarning(clean)


def scrub_junit(config: pytest.Config) -> str | None:
    """The JUnit XML file pytest wrote, scrubbed in place of the secrets this process
    knows; returns a problem to say, if it could not be rewritten."""
    xmlpath = getattr(config.option, "xmlpath", None)
    if not xmlpath or not known_secrets():
        return None
    path = Path(xmlpath)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return None
    clean = scrub_text(text)
    if clean == text:
        return None
    try:
        write_text_atomic(path, clean)
    except OutputUnwritable as exc:
        return f"pytest-sabot: the JUnit XML could not be scrubbed of known secrets ({exc})"
    return None
