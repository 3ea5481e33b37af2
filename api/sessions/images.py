"""GET /sessions/<id>/images/<name>: an image a message carries, to its owner only."""

from __future__ import annotations

from flask import Response, request
from flask.views import MethodView
from flask_smorest import Blueprint

from api.context import login_required, principal, runtime
from shared.sessions import image_store

blp = Blueprint("images", __name__, description="Images in messages")
# An image opened on its own (an SVG, say) may run nothing, load nothing and not be framed:
# stricter than the app-wide policy (api/security.py), which leaves this one in place.
IMAGE_POLICY = "default-src 'none'; frame-ancestors 'none'; sandbox"


@blp.route("/sessions/<session_id:session_id>/images/<image_name:name>")
class SessionImage(MethodView):
    @login_required
    @blp.response(200, description="the image's bytes, with its media type")
    def get(self, session_id: str, name: str) -> Response:
        """Names come from a message's `images`; another user's image is not found."""
        rt, who = runtime(), principal()
        path = image_store.path_of(rt.store, who.user_id, session_id, name)
        # Small files (MAX_IMAGE_BYTES): read whole, so no file stays open with the response.
        response = Response(path.read_bytes(), mimetype=image_store.media_type(name))
        response.set_etag(name.split(".")[0])  # the name is the content's hash
        response.make_conditional(request)
        response.headers["Cache-Control"] = "private, max-age=31536000, immutable"
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Content-Security-Policy"] = IMAGE_POLICY
        return response
