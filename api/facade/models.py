"""`GET /v1/models/{id}`: one offering as OpenAI's model object, so that clients which check
a model before using it (`client.models.retrieve`) find the offerings `GET /v1/models` lists.

An id no offering has is a 404 `model_not_found`, as OpenAI answers it. The list itself is in
views.py; both show an offering with `model_object`.
"""

from __future__ import annotations

from typing import Any

from flask.views import MethodView

from api.context import login_required, principal, runtime
from api.extensions import Blueprint
from api.facade import PREFIX
from api.facade.errors import OPENAI_ERRORS, handle_errors_of
from shared.core.errors import NotFound
from shared.llm import access, models
from shared.llm.models import OfferingInfo

blp = Blueprint(
    "openai_models", __name__, url_prefix=PREFIX, description="OpenAI-compatible facade"
)
handle_errors_of(blp)


def model_object(offering: OfferingInfo) -> dict[str, Any]:
    """An offering in OpenAI's shape (Eonyx keeps no creation time: 0)."""
    return {"id": offering.id, "object": "model", "created": 0, "owned_by": "eonyx"}


@blp.route("/models/<model_id:model_id>")
class Model(MethodView):
    @login_required
    @blp.doc(responses=OPENAI_ERRORS)
    @blp.response(200)
    def get(self, model_id: str) -> dict[str, Any]:
        """One model (an offering) by its id."""
        rt = runtime()
        try:
            with rt.db.session() as db:
                offering = models.get_offering(db, rt.settings, model_id)
            if not access.may_use(rt, principal(), model_id):
                raise NotFound(model_id)  # as one that does not exist
        except NotFound:
            raise NotFound(
                f"the model {model_id!r} does not exist (GET /v1/models lists them)",
                code="model_not_found",
            ) from None
        return model_object(offering)
