"""The real browser for the page tests: Debian's Chromium driven by Playwright for Python
(`executable_path`: Playwright's own browser download is not reachable here)."""

from __future__ import annotations

import shutil

from tests.helpers import requires

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
try:
    from playwright.sync_api import sync_playwright
except ImportError:  # pragma: no cover - the [test] extra installs it
    sync_playwright = None  # type: ignore[assignment]

needs_browser = requires(
    None
    if CHROMIUM and sync_playwright
    else "needs Chromium (Debian package 'chromium') and Playwright for Python"
)
