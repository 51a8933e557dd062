"""The local inspector (``sabot serve``): one web app on 127.0.0.1 over an output root and
its run history, for waves, lab runs, comparisons and launching keyless runs.

* :mod:`.config`: what the server was started with (root, history, token, opt-ins).
* :mod:`.security`: the ASGI guard every request passes first: the access token (a
  cookie after the first visit), the Host and Origin checks, POST with a CSRF token for
  every change, and the response headers that keep pages local.
* :mod:`.views`: the runs list's filters and labels, read from the history.
* :mod:`.pages`: rendering with report.html's own templates and macros.
* :mod:`.launch`: what may be launched (registered matrices, shipped or validated
  scenarios, builtin controllers), the argv of the ordinary command it runs, and the
  subprocesses themselves (progress, cancel).
* :mod:`.routes` and :mod:`.app`: the Starlette application.

The web layer computes no number of its own: every number on a page is read from
results.json, run.json or the history through the functions report.html, ``sabot
compare`` and ``sabot history`` use. docs/SERVE.md is the guide, docs/THREAT_MODEL.md
section "The local inspector" the security reasoning.
"""

from __future__ import annotations

from pytest_sabot.web.app import create_app
from pytest_sabot.web.config import ServeConfig

__all__ = ["ServeConfig", "create_app"]
