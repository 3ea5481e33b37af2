"""Security headers on every response, the interactive API documentation served from this
server alone, and the cookie scheme in the OpenAPI document."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from flask.testing import FlaskClient

from api.security import CONTENT_SECURITY_POLICY
from tests.api.conftest import Chat
from tests.api.test_images_api import data_url, image
from tests.conftest import Account
from tests.fake_llm import text

API = "/api/v1"
EXPECTED_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data: blob:; connect-src 'self'; font-src 'self'; object-src 'none'; "
    "base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)


def test_the_policy_allows_no_inline_or_foreign_script() -> None:
    assert CONTENT_SECURITY_POLICY == EXPECTED_CSP
    directives = dict(d.strip().split(" ", 1) for d in CONTENT_SECURITY_POLICY.split(";"))
    assert directives["script-src"] == "'self'"


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("get", "/healthz", 200),
        ("get", f"{API}/openapi.json", 200),
        ("get", f"{API}/docs", 200),
        ("get", f"{API}/docs/assets/init.js", 200),
        ("get", f"{API}/users/me", 401),
        ("get", f"{API}/sessions", 401),
        ("post", f"{API}/auth/session", 422),
        ("get", "/v1/models", 401),
        ("get", "/nothing/here", 404),
        ("delete", "/healthz", 405),
    ],
)
def test_every_response_carries_the_security_headers(
    client: FlaskClient, method: str, path: str, status: int
) -> None:
    response = getattr(client, method)(path, buffered=True)
    assert response.status_code == status
    assert response.headers["Content-Security-Policy"] == EXPECTED_CSP
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Referrer-Policy"] == "same-origin"
    assert response.headers["X-Frame-Options"] == "DENY"  # for browsers without CSP 3


def test_an_authenticated_answer_carries_them_too(client: FlaskClient, alice: Account) -> None:
    response = client.post(f"{API}/sessions", json={}, headers=alice.headers)
    assert response.status_code == 201
    assert response.headers["Content-Security-Policy"] == EXPECTED_CSP


def test_an_image_keeps_its_own_stricter_policy(chat: Chat) -> None:
    """An image opened on its own (an SVG could hold script) may run and load nothing: the
    app-wide policy, which allows scripts from this origin, must not replace its own."""
    session_id = chat.new_session()
    chat.llm.script(text("A blue square."))
    response = chat.turn(session_id, content=[{"type": "text", "text": "?"}, data_url(image())])
    assert response.status_code == 200, response.get_json()
    [name] = response.get_json()["user_message"]["images"]
    served = chat.client.get(
        f"{API}/sessions/{session_id}/images/{name}", headers=chat.user.headers
    )
    assert served.status_code == 200
    assert served.headers.getlist("Content-Security-Policy") == [
        "default-src 'none'; frame-ancestors 'none'; sandbox"
    ]
    assert served.headers["X-Frame-Options"] == "DENY"
    assert served.headers["X-Content-Type-Options"] == "nosniff"
    # every other answer of the same session still carries the app-wide policy
    listing = chat.client.get(f"{API}/sessions/{session_id}/messages", headers=chat.user.headers)
    assert listing.headers.getlist("Content-Security-Policy") == [EXPECTED_CSP]


class _Refs(HTMLParser):
    """Every URL a page refers to, and whether any script is inline."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self.inline_scripts = 0
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        for name in ("src", "href", "data-spec-url", "data-session-url"):
            if found.get(name):
                self.urls.append(found[name] or "")
        if tag == "script":
            self._in_script = True
            if not found.get("src"):
                self.inline_scripts += 1
        if any(name.startswith("on") for name in found):
            self.inline_scripts += 1  # an event handler attribute is inline script too

    def handle_endtag(self, tag: str) -> None:
        self._in_script = tag != "script" and self._in_script


def test_the_docs_page_loads_everything_from_this_server(client: FlaskClient) -> None:
    page = client.get(f"{API}/docs")
    assert page.status_code == 200
    assert page.mimetype == "text/html"
    html = page.get_data(as_text=True)
    assert not re.search(r"(https?:)?//", html), "the page names another host"
    refs = _Refs()
    refs.feed(html)
    assert refs.inline_scripts == 0
    assert f"{API}/openapi.json" in refs.urls
    types = {}
    assert f"{API}/auth/session" in refs.urls  # where the initializer asks for a CSRF token
    for url in refs.urls:
        assert url.startswith("/"), url
        if url == f"{API}/auth/session":
            continue
        response = client.get(url, buffered=True)
        assert response.status_code == 200, url
        types[url.rsplit("/", 1)[-1]] = response.mimetype
    assert types["swagger-ui-bundle.js"] in ("text/javascript", "application/javascript")
    assert types["init.js"] in ("text/javascript", "application/javascript")
    assert types["swagger-ui.css"] == "text/css"
    bundle = client.get(f"{API}/docs/assets/swagger-ui-bundle.js", buffered=True).get_data(
        as_text=True
    )
    assert "SwaggerUIBundle" in bundle


@pytest.mark.parametrize(
    "name", ["index.html", "oauth2-redirect.html", "..%2F__init__.py", "VERSION", "nope.js"]
)
def test_the_docs_serve_only_their_own_assets(client: FlaskClient, name: str) -> None:
    assert client.get(f"{API}/docs/assets/{name}").status_code == 404


def test_the_openapi_document_declares_bearer_and_cookie_auth(client: FlaskClient) -> None:
    spec = client.get(f"{API}/openapi.json").get_json()
    schemes = spec["components"]["securitySchemes"]
    assert schemes["bearerAuth"] == {"type": "http", "scheme": "bearer"}
    cookie = schemes["cookieAuth"]
    assert (cookie["type"], cookie["in"], cookie["name"]) == ("apiKey", "cookie", "eonyx_session")
    assert "X-CSRF-Token" in cookie["description"]
    assert spec["security"] == [{"bearerAuth": []}, {"cookieAuth": []}]
    sign_in = spec["paths"][f"{API}/auth/session"]
    assert sign_in["post"]["security"] == []
    assert set(sign_in) == {"get", "post", "delete"}
