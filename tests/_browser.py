"""Open a local HTML file in headless Chromium (the system's, never a downloaded build).

``open_page`` drives the browser with Playwright (``playwright`` from PyPI, launched with
``executable_path`` set to ``chromium_path()``) and returns what a test checks: the console
errors (``console.error`` messages, uncaught exceptions, and any request that leaves the
file system, which is refused), the load time measured by the page itself (navigation start
to the end of the load event, from the Navigation Timing entry), the title and the visible
text.  ``chromium_path`` is None when no Chromium is installed; tests decide whether that
skips or fails.
"""

from __future__ import annotations

import os
import pathlib
import shutil
from dataclasses import dataclass

#: executables tried in order; ``DSGC_CHROMIUM`` (a path) comes first when set
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
#: the window the page is laid out and screenshot in
VIEWPORT = {"width": 1360, "height": 900}


@dataclass
class PageLoad:
    """What opening a page gave: console errors, load time in ms, title and visible text."""

    console_errors: list[str]
    load_ms: float
    title: str
    text: str


def chromium_path() -> str | None:
    """The Chromium executable (``$DSGC_CHROMIUM``, else the first of ``CHROMIUM_NAMES`` on PATH), or None."""
    explicit = os.environ.get("DSGC_CHROMIUM")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def open_page(path: pathlib.Path, screenshot: pathlib.Path | None = None) -> PageLoad:
    """Open ``path`` (a local file) in headless Chromium; write a viewport PNG to ``screenshot``.

    Raises ``RuntimeError`` when no Chromium is installed and ``ImportError`` without playwright.
    """
    from playwright.sync_api import sync_playwright

    executable = chromium_path()
    if executable is None:
        raise RuntimeError("no Chromium found: install it (apt-get install chromium) or set DSGC_CHROMIUM")
    errors: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport=VIEWPORT)
            page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
            page.on("pageerror", lambda exc: errors.append(f"uncaught: {exc}"))

            def offline(route, request):  # the page must need nothing but itself
                if request.url.startswith(("file:", "data:")):
                    route.continue_()
                else:
                    errors.append(f"network request refused: {request.url}")
                    route.abort()

            page.route("**/*", offline)
            page.goto(pathlib.Path(path).resolve().as_uri(), wait_until="load")
            load_ms = float(
                page.evaluate(
                    "() => { const n = performance.getEntriesByType('navigation')[0];"
                    " return n.loadEventEnd - n.startTime; }"
                )
            )
            if screenshot is not None:
                pathlib.Path(screenshot).parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(screenshot))
            return PageLoad(console_errors=errors, load_ms=load_ms, title=page.title(), text=page.inner_text("body"))
        finally:
            browser.close()
