"""Shared pieces of the report tests: recorded runs made once per session (and shared by
every xdist worker), and a headless Chromium that records every request a page makes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
SLICE = ["--sabot-wave=1", "--sabot-task=T1", "--sabot-seed=11"]
SCREENSHOT_ENV = "SABOT_REPORT_SCREENSHOTS"


def shared_dir(config: pytest.Config, factory: pytest.TempPathFactory, name: str) -> Path:
    """A directory every xdist worker of this session sees."""
    base = factory.getbasetemp()
    root = base.parent if hasattr(config, "workerinput") else base
    return root / name


def recorded_run(root: Path, name: str, *options: str) -> Path:
    """A keyless slice run through the plugin, exactly as a user runs it, once per session.

    Its results directory (results.json and cells/) is returned; tests copy it before
    changing anything in it."""
    out = root / name
    root.mkdir(parents=True, exist_ok=True)
    with FileLock(str(root / f"{name}.lock")):
        if not (out / "results.json").is_file():
            command = [sys.executable, "-m", "pytest", *options, "-q", "-p", "no:cacheprovider",
                       "-p", "no:xdist", "--sabot-out", str(out)]
            done = subprocess.run(command, cwd=root, capture_output=True, text=True,
                                  timeout=600, env={**os.environ, "SABOT_JUDGE": "sim"})
            assert (out / "results.json").is_file(), done.stdout[-3000:] + done.stderr[-3000:]
    return out


def copy_run(source: Path, target: Path) -> Path:
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("*.lock", "locks"))
    return target


@dataclass
class Browser:
    """A persistent Chromium context with a fresh profile; every request is recorded."""

    context: Any
    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def reset(self) -> None:
        self.requests.clear()
        self.errors.clear()
        for page in self.context.pages:
            page.close()

    def open(self, url: str) -> Any:
        page = self.context.new_page()
        page.on("request", lambda request: self.requests.append(request.url))
        page.on("pageerror", lambda error: self.errors.append(str(error)))
        page.on("console", lambda message: self.errors.append(message.text)
                if message.type == "error" else None)
        page.goto(url, wait_until="load")
        return page

    def left_the_page(self) -> list[str]:
        """Every request that was not for a local file or inline data."""
        return [u for u in self.requests if not u.startswith(("file://", "data:"))]


def chromium_context(profile: Path) -> Iterator[Browser]:
    if not Path(CHROMIUM).is_file():
        pytest.skip(f"Debian's chromium is not installed at {CHROMIUM} "
                    "(apt-get install -y chromium); the browser tests need it")
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="the playwright package (dev extra) is not installed"
    )
    with sync_api.sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, headless=True, args=FLAGS,
            viewport={"width": 1280, "height": 900},
        )
        context.set_default_timeout(15_000)
        browser = Browser(context)

        def refuse(route: Any) -> None:
            browser.requests.append(route.request.url)
            if route.request.url.startswith(("file://", "data:")):
                route.continue_()
            else:
                route.abort()

        context.route("**/*", refuse)
        try:
            yield browser
        finally:
            context.close()


def keep_screenshot(page: Any, tmp_path: Path, name: str) -> Path:
    """A full-page screenshot under the test's tmp dir; copied to the directory named by
    SABOT_REPORT_SCREENSHOTS (e.g. reports/screenshots) when that variable is set."""
    path = tmp_path / name
    page.screenshot(path=str(path), full_page=True)
    stable = os.environ.get(SCREENSHOT_ENV)
    if stable:
        Path(stable).mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, Path(stable) / name)
    return path
