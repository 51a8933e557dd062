"""Rendering the inspector's pages with report.html's own templates and macros (one set
for both, in pytest_sabot/report/html/templates): each page of the inspector extends the
report page it shows (results, cell, compare, lab run) or base.html.j2, and adds the bar
of links and forms in ``serve_macros.html.j2``.

The served pages differ from report.html in their policy alone: they may talk to this
server (``connect-src 'self'`` for the progress stream, ``form-action 'self'`` for the
forms), and they carry one more script, serve.js, allowed by its hash (and serve.css
beside report.css).
"""

from __future__ import annotations

import functools
from importlib import resources
from typing import Any

PACKAGE = "pytest_sabot.report.html"
TEMPLATES = "templates"
SERVE_JS = "serve.js"
SERVE_CSS = "serve.css"
# A form's POST carries this server's Origin only when the page's referrer policy lets it:
# under no-referrer Chromium sends ``Origin: null``, which the guard refuses. same-origin
# still sends nothing to any other site.
REFERRER = "same-origin"


@functools.cache
def assets() -> tuple[str, str, str]:
    """(css, js, Content-Security-Policy) of every served page."""
    from pytest_sabot.report.html._common import assets as report_assets
    from pytest_sabot.report.html._common import content_policy

    report_css, report_js, _ = report_assets()
    folder = resources.files(PACKAGE) / TEMPLATES
    css = report_css + "\n" + (folder / SERVE_CSS).read_text(encoding="utf-8")
    js = report_js + "\n" + (folder / SERVE_JS).read_text(encoding="utf-8")
    return css, js, content_policy(js, served=True)


def policy() -> str:
    """The policy every response carries as a header: the page's own, and no framing
    (a browser honours ``frame-ancestors`` only in the header)."""
    return assets()[2] + "; frame-ancestors 'none'"


def render(template: str, **context: Any) -> str:
    """One served page: the report's environment (autoescape on), the served assets."""
    from pytest_sabot.report.html._common import environment

    css, js, csp = assets()
    return environment().get_template(template).render(css=css, js=js, csp=csp,
                                                       referrer=REFERRER, **context)


def macro(template: str, name: str, *args: Any) -> str:
    """One macro of a template rendered alone (a piece of a page kept rendered, such as
    a run's actions over a wave page whose body is reused)."""
    from pytest_sabot.report.html._common import environment

    return str(getattr(environment().get_template(template).module, name)(*args))
