"""The Flask app factory. It only wires: settings in, blueprints and handlers registered."""

from __future__ import annotations

from flask import Flask

from api import health, jobs
from api.accounts import views as accounts_views
from api.catalog import views as catalog_views
from api.errors import register_error_handlers
from api.events import register_events
from api.extensions import EonyxApi
from api.memory import views as memory_views
from api.sessions import likes as _likes  # noqa: F401  (adds its routes to the blueprint)
from api.sessions import turns as _turns  # noqa: F401  (adds its routes to the blueprint)
from api.sessions import views as sessions_views
from shared.core.settings import Settings
from shared.runtime import JobQueue, Runtime

API_PREFIX = "/api/v1"


def create_app(settings: Settings, *, jobs_queue: JobQueue | None = None) -> Flask:
    app = Flask(__name__)
    app.config.update(
        MAX_CONTENT_LENGTH=settings.max_request_bytes,
        API_TITLE="Eonyx",
        API_VERSION="v1",
        OPENAPI_VERSION="3.0.3",
        OPENAPI_URL_PREFIX=API_PREFIX,
        OPENAPI_JSON_PATH="openapi.json",
        JSON_SORT_KEYS=False,
    )
    runtime = Runtime.build(settings, jobs=jobs_queue or _default_jobs(settings))
    app.extensions["eonyx"] = runtime
    register_api(app)
    register_error_handlers(app)
    app.register_blueprint(health.blp)
    register_events(app)
    return app


def _default_jobs(settings: Settings) -> JobQueue | None:
    from workers.app import broker_url, create_celery
    from workers.queue import CeleryJobs

    try:
        broker_url(settings)
    except RuntimeError:
        return None
    return CeleryJobs(create_celery(settings))


def register_api(app: Flask) -> None:
    api = EonyxApi(
        app,
        spec_kwargs={
            "components": {"securitySchemes": {"bearerAuth": {"type": "http", "scheme": "bearer"}}},
            "security": [{"bearerAuth": []}],
        },
    )
    for blueprint in (
        accounts_views.blp,
        sessions_views.blp,
        memory_views.blp,
        catalog_views.blp,
        jobs.blp,
    ):
        api.register_blueprint(blueprint, url_prefix=API_PREFIX)
