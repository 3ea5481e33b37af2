"""The web client is served by the API itself: the page at / and at the client's routes,
its modules and vendored libraries from the package, and nothing of the API shadowed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from flask.testing import FlaskClient

import api.web
from shared.core.release import eonyx_version

STATIC = Path(api.web.__file__).parent / "static"


@pytest.mark.parametrize(
    "path", ["/", "/signin", "/trash", "/archived", "/c/20260101T120000-0123abcd"]
)
def test_the_page_answers_at_the_client_routes(client: FlaskClient, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 200
    assert response.mimetype == "text/html"
    assert b'<script type="module" src="/static/js/main.js">' in response.data
    assert response.headers["Cache-Control"] == "no-cache"


def test_every_file_the_page_names_is_served(client: FlaskClient) -> None:
    page = client.get("/").get_data(as_text=True)
    for path in re.findall(r'(?:href|src)="(/static/[^"]+)"', page):
        response = client.get(path)
        assert response.status_code == 200, path
        response.close()


def test_modules_are_served_as_javascript_and_revalidated(client: FlaskClient) -> None:
    for path in ("/static/js/main.js", "/static/vendor/preact.js", "/static/vendor/markdown.js"):
        response = client.get(path)
        assert response.status_code == 200
        assert response.mimetype == "text/javascript"
        assert response.headers["Cache-Control"] == "no-cache"
        etag = response.headers["ETag"]
        response.close()
        again = client.get(path, headers={"If-None-Match": etag})
        assert again.status_code == 304
        again.close()


def test_every_module_imports_only_files_that_exist() -> None:
    """No build step: a relative import that names a missing file breaks the page."""
    modules = [*(STATIC / "js").glob("*.js"), *(STATIC / "panels").glob("*.js")]
    assert modules
    for module in modules:
        for target in re.findall(r'from "(\.{1,2}/[^"]+)"', module.read_text()):
            assert (module.parent / target).resolve().is_file(), f"{module.name} imports {target}"


def test_the_test_only_axe_core_is_not_served(client: FlaskClient) -> None:
    """axe-core (654 KB) runs in the accessibility tests only: it is not in the package."""
    response = client.get("/static/vendor/axe.min.js")
    assert response.status_code == 404
    response.close()
    assert not list(STATIC.rglob("axe*"))


def test_the_api_keeps_its_json_errors_around_the_page(client: FlaskClient) -> None:
    for path in ("/api/v1/nothing", "/v1/nothing", "/c/not-a-session-id", "/static/nothing.js"):
        response = client.get(path)
        assert response.status_code == 404, path
        response.close()
    assert client.get("/api/v1/nothing").get_json()["error"]["code"] == "not_found"
    assert client.get("/healthz").get_json() == {"status": "ok", "version": eonyx_version()}
