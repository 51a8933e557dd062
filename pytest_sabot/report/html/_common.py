"""What every page of the HTML report shares: the Jinja environment, number formatting,
the inline stylesheet and script, and the page's Content-Security-Policy.

Every page is one self-contained file: CSS and JS are inlined, charts are SVG drawn at
build time, and the policy (``default-src 'none'``) forbids the browser to fetch anything,
so a report opened from ``file://`` makes no request of any kind. Every string read from a
run (traces hold model text) passes through Jinja's autoescaping; the one script is
allowed by its hash, so markup that slipped through could not run either.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import os
import re
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2

PACKAGE = "pytest_sabot.report.html"
TEMPLATES = "templates"
TEXT_LIMIT = 2000  # characters of one trace text shown in a timeline before it is cut


def pct(value: Any, digits: int = 1) -> str:
    """A fraction as a percentage, 'n/a' when there is none."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return "n/a"
    return f"{100 * value:.{digits}f}%"


def points(value: Any) -> str:
    """A difference of fractions in percentage points, signed."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return "n/a"
    return f"{100 * value:+.1f} pp"


def is_rate(value: Any) -> bool:
    """A Rate as results.json writes it: k of n with a value and a 95% interval."""
    return isinstance(value, dict) and {"k", "n", "value", "ci_low", "ci_high"} <= set(value)


def ci(rate: Any) -> str:
    """'[low, high]' of a rate in percent, 'n/a' when n is 0."""
    if not is_rate(rate) or rate["ci_low"] is None or rate["ci_high"] is None:
        return "n/a"
    return f"[{100 * rate['ci_low']:.1f}, {100 * rate['ci_high']:.1f}]"


def rate_text(rate: Any) -> str:
    """'33.3% [9.7, 70.0]' (the terminal's and RESULTS.md's form), 'n/a' when n is 0."""
    if not is_rate(rate) or rate["value"] is None:
        return "n/a"
    return f"{pct(rate['value'])} {ci(rate)}"


_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def slug(text: str) -> str:
    """A string usable as an HTML id and a file name (cell ids already are)."""
    return _UNSAFE.sub("_", text) or "_"


def href(path: str) -> str:
    """A relative link to a file, every segment percent-encoded."""
    return quote(path, safe="/#")


def relative_base(page_dir: Path, target_dir: Path) -> str:
    """The relative URL prefix from a page's folder to a folder ('' when they are one)."""
    rel = os.path.relpath(target_dir.resolve(), page_dir.resolve())
    return "" if rel == "." else Path(rel).as_posix() + "/"


def shorten(text: str, limit: int = TEXT_LIMIT) -> str:
    return text if len(text) <= limit else text[:limit]


def _asset(name: str) -> str:
    return (resources.files(PACKAGE) / TEMPLATES / name).read_text(encoding="utf-8")


@functools.cache
def assets() -> tuple[str, str, str]:
    """(css, js, Content-Security-Policy) of every page."""
    js = _asset("report.js")
    return _asset("report.css"), js, content_policy(js)


def content_policy(js: str, *, served: bool = False) -> str:
    """The Content-Security-Policy of a page whose one script is ``js`` (allowed by its
    sha256): nothing else loads. A ``served`` page (sabot serve) may also fetch from and
    post forms to its own origin."""
    digest = base64.b64encode(hashlib.sha256(js.encode("utf-8")).digest()).decode("ascii")
    own = "'self'" if served else "'none'"
    return (
        "default-src 'none'; "
        "style-src 'unsafe-inline'; "
        f"script-src 'sha256-{digest}'; "
        "img-src data:; "
        + ("connect-src 'self'; " if served else "")
        + f"base-uri 'none'; form-action {own}"
    )


@functools.cache
def environment() -> jinja2.Environment:
    """The report's template environment: package-data templates, autoescape always on."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader(PACKAGE, TEMPLATES),
        autoescape=True,
        undefined=jinja2.ChainableUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        pct=pct, points=points, ci=ci, rate_text=rate_text, slug=slug, href=href,
        shorten=shorten,
    )
    env.tests["rate"] = is_rate
    env.globals["TEXT_LIMIT"] = TEXT_LIMIT
    return env


def render(template: str, **context: Any) -> str:
    """Render one page template with the shared stylesheet, script and policy."""
    css, js, policy = assets()
    page = environment().get_template(template)
    return page.render(css=css, js=js, csp=policy, **context)
