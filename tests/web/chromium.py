"""Debian's Chromium as the browser tests and bench/bench_web.py launch it (Playwright's own
browser download cannot reach the network here)."""

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
