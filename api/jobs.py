"""Administrative jobs: start an index rebuild in a worker and follow it."""

from __future__ import annotations

from typing import Any

import marshmallow as ma
from flask.views import MethodView

from api.context import admin_required, runtime
from api.extensions import Blueprint
from api.schemas import Schema
from shared.core import job_names
from shared.core.errors import Unavailable
from shared.core.job_names import JobQueue

blp = Blueprint("jobs", __name__, description="Background jobs")


class JobSchema(Schema):
    id = ma.fields.String()
    state = ma.fields.String()
    result = ma.fields.Raw(allow_none=True)
    error = ma.fields.String(allow_none=True)


def _jobs() -> JobQueue:
    jobs = runtime().jobs
    if jobs is None:
        raise Unavailable(
            "no job queue is configured (set REDIS_URL or use `eonyx serve`)", code="no_queue"
        )
    return jobs


@blp.route("/index/rebuild")
class IndexRebuild(MethodView):
    @admin_required
    @blp.response(202, JobSchema)
    def post(self) -> dict[str, Any]:
        job_id = _jobs().enqueue(job_names.INDEX_REBUILD)
        return {"id": job_id, "state": "PENDING"}


@blp.route("/jobs/<job_id:job_id>")
class JobById(MethodView):
    @admin_required
    @blp.response(200, JobSchema)
    def get(self, job_id: str) -> dict[str, object]:
        return _jobs().status(job_id)
