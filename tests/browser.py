"""Headless Debian Chromium driven by Playwright, for tests of the HTML report.

Playwright only drives the system browser (``executable_path``): it never downloads
one. Locally, a machine without Chromium or Playwright skips the browser tests with
the reason; in CI (``CI`` set) their absence is a failure, so they always run there.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts" / "html"
"""Screenshots of every view, kept (gitignored) for a person to look at."""
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"browser tests must run in CI: {reason} (make test installs it)")
    pytest.skip(f"browser tests skipped: {reason}; run `make browser` to install it")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Module-scoped on purpose: Playwright's sync API keeps an event loop running in this
    thread while it is open, and the other modules' ``asyncio.run`` calls would fail."""
    executable = chromium_path()
    if executable is None:
        _unavailable("no chromium on PATH")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the playwright package is not installed")
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
        yield chromium
        chromium.close()


@dataclass
class Page:
    """A page plus what it did that a report must never do: log errors, use the network."""

    page: Any
    url: str
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    def check_clean(self) -> None:
        assert self.errors == [], self.errors
        assert self.requests == [self.url], self.requests

    def finish(self, name: str) -> None:
        """Keep a screenshot of the view, then check the page stayed clean."""
        self.screenshot(name)
        self.check_clean()

    def screenshot(self, name: str) -> Path:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path


@pytest.fixture
def open_report(browser: Any) -> Iterator[Any]:
    contexts: list[Any] = []

    def opener(path: Path, *, javascript: bool = True, fragment: str = "") -> Page:
        context = browser.new_context(
            viewport={"width": 1300, "height": 900}, java_script_enabled=javascript
        )
        contexts.append(context)
        page = context.new_page()
        url = path.resolve().as_uri()
        opened = Page(page, url)
        page.on(
            "console",
            lambda m: opened.errors.append(m.text) if m.type in ("error", "warning") else None,
        )
        page.on("pageerror", lambda e: opened.errors.append(str(e)))
        page.on("request", lambda r: opened.requests.append(r.url))
        page.goto(url + fragment)
        if javascript:
            page.wait_for_selector("body[data-ready]", timeout=30_000)
        return opened

    yield opener
    for context in contexts:
        context.close()
