"""Open a local HTML file in headless Chromium (the system's, never a downloaded one).

``open_page(path, screenshot=None)`` loads ``path`` with Playwright driving the Debian
``chromium`` binary (``chromium_path()``; None when it is not installed) and returns what a
test checks: the console errors (console messages of type "error" and uncaught page
errors), the time until the load event, the title and the visible text.  Nothing leaves the
machine: every request that is not a ``file:`` URL is aborted and counted as a console error.
"""

from __future__ import annotations

import pathlib
import re
import shutil
import time
from dataclasses import dataclass

#: executable names of the system Chromium, in the order they are tried
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")


@dataclass
class PageLoad:
    """What opening a page gave: errors, time to the load event (ms), title, visible text."""

    console_errors: list[str]
    load_ms: float
    title: str
    text: str


def chromium_path() -> str | None:
    """The system Chromium executable, or None when none is installed."""
    return next((found for name in CHROMIUM_NAMES if (found := shutil.which(name))), None)


def open_page(path: pathlib.Path, screenshot: pathlib.Path | None = None) -> PageLoad:
    """Load the local file ``path`` in headless Chromium; a full-page PNG to ``screenshot`` if given."""
    from playwright.sync_api import sync_playwright

    executable = chromium_path()
    if executable is None:
        raise FileNotFoundError(f"no Chromium executable ({', '.join(CHROMIUM_NAMES)}) on PATH")
    errors: list[str] = []
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=executable, headless=True, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
            page.on("pageerror", lambda error: errors.append(f"uncaught: {error}"))

            def offline(route):  # a page under test must work without the network
                errors.append(f"blocked a network request: {route.request.url}")
                route.abort()

            page.route(re.compile(r"^(https?|wss?)://"), offline)
            start = time.perf_counter()
            page.goto(pathlib.Path(path).resolve().as_uri(), wait_until="load")
            load_ms = (time.perf_counter() - start) * 1000.0
            if screenshot is not None:
                page.screenshot(path=str(screenshot), full_page=True)
            return PageLoad(errors, load_ms, page.title(), page.inner_text("body"))
        finally:
            browser.close()
