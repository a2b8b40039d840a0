"""The documentation site builds strictly and every page renders in headless Chromium.

``mkdocs build --strict`` (what ``make docs`` runs) must pass with no warning and no network;
then each built page opens in the system's Chromium (``tests/_browser.py``) with no console
error, a title, its heading in the visible text, and a full-page screenshot.  In CI a missing
Chromium or docs extra fails the test (``.ci/run`` installs Chromium); elsewhere it skips.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests._browser import chromium_path, open_page
from tests._requires import require, skip_or_fail

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    require("mkdocs", "docs")
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    return out


def test_the_site_has_a_page_per_nav_entry(site):
    pages = {p.relative_to(site).as_posix() for p in site.rglob("index.html")}
    assert {"index.html", "engine/index.html", "performance/index.html", "api/dsgc_fast/index.html"} <= pages
    api = (site / "api" / "dsgc_fast" / "index.html").read_text(encoding="utf-8")
    assert 'id="dsgc_fast.retain"' in api and 'id="dsgc_fast.MemoryStore"' in api  # from the docstrings


def test_every_page_renders_in_chromium(site, tmp_path):
    require("playwright", "docs")
    if chromium_path() is None:
        skip_or_fail("no Chromium: install Debian's chromium package (.ci/run does)")
    shots = Path(os.environ.get("DSGC_SCREENSHOTS", tmp_path))
    shots.mkdir(parents=True, exist_ok=True)
    for page in sorted(site.rglob("index.html")):
        name = page.parent.relative_to(site).as_posix().replace("/", "-") or "home"
        shot = shots / f"{name}.png"
        load = open_page(page, screenshot=shot)
        assert load.console_errors == [], (name, load.console_errors)
        assert load.title.endswith("dsgc"), (name, load.title)
        heading = page.read_text(encoding="utf-8").split("<h1", 1)[1].split(">", 1)[1].split("<", 1)[0]
        assert heading.strip() and heading.strip() in load.text, (name, heading)
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
