"""Single sign-on in Chromium: with OIDC_ISSUER set, the sign-in page shows "Sign in with
<provider>"; clicking it goes through a real OpenID provider on loopback (oidc-provider-mock)
and its sign-in form, and comes back signed in to the chat."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from tests.cli.serving import launch_serve, ready, serve_environment
from tests.conftest import free_port, wait_for
from tests.fake_llm import FakeLLM
from tests.oidc_provider import person, provider_process
from tests.web.conftest import Browsing, Model, Server


@pytest.fixture(scope="module")
def issuer() -> Iterator[str]:
    # By another name than Eonyx's 127.0.0.1: another site, as a real provider is.
    with provider_process(host="localhost") as url:
        yield url


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, issuer: str) -> Iterator[Server]:
    """`eonyx serve` set up for single sign-on (its port chosen first: PUBLIC_URL names it)."""
    tmp_path = tmp_path_factory.mktemp("web-oidc")
    llm = FakeLLM().start()
    port = free_port()
    environment = serve_environment(tmp_path) | {
        "EONYX_LLM_BASE_URL": llm.base_url,
        "EONYX_LLM_MODEL": "fake-model",
        "PUBLIC_URL": f"http://127.0.0.1:{port}",
        "OIDC_ISSUER": issuer,
        "OIDC_CLIENT_ID": "eonyx-web",
        "OIDC_CLIENT_SECRET": "the-client-secret",
        "OIDC_PROVIDER_NAME": "Example SSO",
    }
    served = launch_serve(environment, "--port", str(port))
    try:
        url = served.wait_url()
        assert url.rstrip("/") == f"http://127.0.0.1:{port}"
        with httpx.Client(base_url=url, timeout=10) as http:
            wait_for(lambda: ready(http), 60, "/readyz (the worker's heartbeat)", interval=0.2)
        yield Server(url, served, llm, Model(llm))
    finally:
        served.stop(grace=30)
        llm.stop()


def test_the_sign_in_page_offers_the_provider_and_its_button_signs_in(
    web: Browsing, issuer: str, shots: Path
) -> None:
    person(issuer, "sub-erin", preferred_username="erin")
    page: Any = web.context().new_page()
    page.on("pageerror", lambda error: web.errors.append(str(error)))
    page.goto("/")
    button = page.get_by_role("button", name="Sign in with Example SSO")
    expect(button).to_be_visible()
    expect(page.get_by_label("Username")).to_be_visible()  # the password form stays
    page.screenshot(path=shots / "signin-sso.png")

    button.click()
    page.wait_for_url(f"{issuer}/oauth2/authorize*")
    page.locator('input[name="sub"]').fill("sub-erin")
    page.get_by_role("button", name="Authorize").click()

    page.get_by_role("button", name="New chat").wait_for()
    assert page.url.rstrip("/") == web.server.url.rstrip("/")
    me = page.evaluate("fetch('/api/v1/users/me').then((r) => r.json())")
    assert me["username"] == "erin"
    page.screenshot(path=shots / "signin-sso-signed-in.png")
