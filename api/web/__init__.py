"""The web client: `index.html` for `/` and the client's own routes, and its ES modules,
styles and vendored libraries under `/static/` (files shipped with the package: no Node.js
and no build at run time; see api/web/vendor.sh for the third-party part)."""

from __future__ import annotations

from pathlib import Path

from flask import Blueprint, Response

STATIC = Path(__file__).parent / "static"
# Routes the client draws itself (history API); each answers the same page. Nothing here
# overlaps /api, /v1, /healthz, /readyz, /integrations or /metrics.
CLIENT_ROUTES = (
    "/",
    "/signin",
    "/trash",
    "/archived",
    "/c/<session_id:session_id>",
    "/invite/<invite_secret:secret>",  # an invite link: the accept-invite form
    "/shared/<share_token:token>",  # a read-only link to a snapshot of someone's chat
)

blp = Blueprint("web", __name__, static_folder="static", static_url_path="/static")


def index(**_: str) -> Response:
    """The page (a few hundred bytes: read whole, so no file stays open with the response)."""
    response = Response((STATIC / "index.html").read_bytes(), mimetype="text/html")
    response.headers["Cache-Control"] = "no-cache"
    return response


for rule in CLIENT_ROUTES:
    blp.add_url_rule(rule, "index" if rule == "/" else f"index{rule.split('/')[1]}", index)


@blp.after_request
def revalidate(response: Response) -> Response:
    """The modules have no hashed names (no build step): browsers revalidate them (a 304 with
    the ETag costs a round trip, never a stale client after an upgrade)."""
    response.headers.setdefault("Cache-Control", "no-cache")
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    return response
