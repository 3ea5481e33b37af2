"""In Debian's Chromium, under the server's Content-Security-Policy: the API documentation
renders with no policy violation, a signed-in page's own WebSocket connects
(`connect-src 'self'`), its cookie stays out of reach of scripts, and an injected inline
script does not run."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask

from tests.api.websockets import live
from tests.conftest import IN_CI, Account
from tests.web.chromium import ARGS, CHROMIUM

WATCH_CSP = (
    "window.__csp = []; document.addEventListener('securitypolicyviolation',"
    " (e) => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));"
)
pytestmark = pytest.mark.slow


@pytest.fixture
def browser() -> Iterator[Any]:
    if not os.path.exists(CHROMIUM):
        if IN_CI:
            pytest.fail("CI needs Debian's chromium for the browser tests")
        pytest.skip("chromium is not installed")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        # root in a container: Chromium's sandbox cannot start there
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield chromium
        chromium.close()


def test_the_docs_render_under_the_policy_and_a_signed_in_page_keeps_its_rules(
    app: Flask, alice: Account, browser: Any
) -> None:
    with live(app) as ws_url:
        base = "http://" + ws_url.split("/")[2]
        page = browser.new_page()
        page.add_init_script(WATCH_CSP)
        page.goto(f"{base}/api/v1/docs")
        page.wait_for_selector(".opblock-tag", timeout=30_000)
        assert page.locator(".opblock-tag").count() >= 10
        page.wait_for_load_state("networkidle")
        assert page.evaluate("window.__csp") == []

        seen = page.evaluate(
            """async () => {
              const json = { "Content-Type": "application/json" };
              const signIn = await fetch("/api/v1/auth/session", { method: "POST",
                headers: json, body: JSON.stringify({ username: "alice",
                password: "correct horse" }) });
              const { csrf_token } = await signIn.json();
              const first = await new Promise((resolve) => {
                const ws = new WebSocket(`ws://${location.host}/api/v1/events`);
                ws.onmessage = (event) => { resolve(JSON.parse(event.data)); ws.close(); };
                ws.onerror = () => resolve("failed");
              });
              const without = await fetch("/api/v1/sessions", { method: "POST",
                headers: json, body: "{}" });
              const withToken = await fetch("/api/v1/sessions", { method: "POST",
                headers: { ...json, "X-CSRF-Token": csrf_token }, body: "{}" });
              return { signIn: signIn.status, first, without: without.status,
                       withToken: withToken.status, cookies: document.cookie };
            }"""
        )
        assert seen == {
            "signIn": 200,
            "first": {"type": "ready"},
            "without": 403,
            "withToken": 201,
            "cookies": "",
        }
        assert page.evaluate("window.__csp") == []

        page.evaluate(
            "() => { const s = document.createElement('script');"
            " s.textContent = 'window.injected = 1'; document.body.appendChild(s); }"
        )
        page.wait_for_function("window.__csp.length > 0")
        assert page.evaluate("window.injected") is None
        assert page.evaluate("window.__csp")[0].startswith("script-src")
