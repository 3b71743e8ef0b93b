"""Headless Chromium for tests of HTML pages: Debian's browser, driven by Playwright.

`.ci/run` installs Debian's `chromium`; Playwright (the dev extra) drives it through
`executable_path`, so nothing is downloaded. Where either is missing the test skips and says
which. Screenshots go to `artifact_dir()`: `$KIMMY_TEST_ARTIFACTS` when set (CI keeps them),
else the test's own temporary folder.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

#: The flags a root, offline, screenless machine needs (no sandbox, no GPU, no calls home).
CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
#: A laptop screen.
LAPTOP = {"width": 1366, "height": 768}


def chromium_path() -> str:
    """The Chromium executable, or skip the test saying what is missing."""
    for name in (os.environ.get("KIMMY_CHROMIUM", ""), "/usr/bin/chromium", "chromium"):
        found = name and shutil.which(name)
        if found:
            return found
    pytest.skip("headless Chromium is not installed (apt-get install chromium; .ci/run does)")


def artifact_dir(tmp_path: Path) -> Path:
    """Where screenshots of a test go ($KIMMY_TEST_ARTIFACTS, else `tmp_path`)."""
    root = os.environ.get("KIMMY_TEST_ARTIFACTS")
    out = Path(root) if root else tmp_path
    out.mkdir(parents=True, exist_ok=True)
    return out


@contextmanager
def browser_page(viewport: dict[str, int] | None = None) -> Iterator[Any]:
    """A fresh Playwright page in headless Chromium (closed on exit)."""
    executable = chromium_path()
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, args=list(CHROMIUM_ARGS))
        try:
            page = browser.new_page(viewport=viewport or LAPTOP)
            yield page
        finally:
            browser.close()


__all__ = ["CHROMIUM_ARGS", "LAPTOP", "artifact_dir", "browser_page", "chromium_path"]
