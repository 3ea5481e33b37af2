"""GET /api/v1/docs: the interactive API documentation (Swagger UI) for /api/v1/openapi.json.

Swagger UI's files come from the `flask-swagger-ui` package (pinned in pyproject.toml), never
from a CDN: team servers often sit on a LAN. The page itself carries no inline script (the
Content-Security-Policy forbids it): `static/init.js` starts Swagger UI. A signed-in browser
can "Try it out" with its session cookie: the initializer fetches the sign-in's CSRF token and
adds it to the requests that need it; anyone else authorizes with a bearer token.
"""

from __future__ import annotations

from pathlib import Path

import flask_swagger_ui
from flask import Blueprint, Response, abort, send_from_directory, url_for
from markupsafe import escape

SWAGGER_DIST = Path(flask_swagger_ui.__file__).parent / "dist"
OWN_STATIC = Path(__file__).parent / "static"
# Only these are served: the rest of the package's dist (its own inline-script HTML pages,
# source maps) is of no use here.
SWAGGER_FILES = frozenset(
    {
        "swagger-ui.css",
        "swagger-ui-bundle.js",
        "favicon-16x16.png",
        "favicon-32x32.png",
    }
)
OWN_FILES = frozenset({"init.js", "docs.css"})

blp = Blueprint("docs", __name__)


@blp.get("/docs")
def page() -> Response:
    def asset(name: str) -> str:
        return str(escape(url_for("docs.asset", name=name)))

    html = f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Eonyx API</title>
<link rel="icon" type="image/png" href="{asset("favicon-32x32.png")}" sizes="32x32">
<link rel="stylesheet" href="{asset("swagger-ui.css")}">
<link rel="stylesheet" href="{asset("docs.css")}">
</head>
<body>
<div id="swagger-ui" data-spec-url="{escape(url_for("api-docs.openapi_json"))}"
     data-session-url="{escape(url_for("browser.SignIn"))}"></div>
<noscript>The interactive documentation needs JavaScript; the OpenAPI document itself is at
<a href="{escape(url_for("api-docs.openapi_json"))}">openapi.json</a>.</noscript>
<script src="{asset("swagger-ui-bundle.js")}"></script>
<script src="{asset("init.js")}"></script>
</body>
</html>
"""
    return Response(html, mimetype="text/html")


@blp.get("/docs/assets/<name>")
def asset(name: str) -> Response:
    if name in SWAGGER_FILES:
        return send_from_directory(SWAGGER_DIST, name, max_age=3600)
    if name in OWN_FILES:
        return send_from_directory(OWN_STATIC, name, max_age=3600)
    abort(404)
    raise AssertionError("abort raises")
