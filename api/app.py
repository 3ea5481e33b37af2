"""The Flask app factory. It only wires: settings in, blueprints and handlers registered.

Whoever builds the app passes in the job queue (api/wsgi.py and cli/server.py pass the Celery
one; tests pass their own), so api/ never imports workers/.
"""

from __future__ import annotations

import weakref

from flask import Flask

from api import docs, groups, health, jobs, teams, usage
from api import settings as settings_views
from api.accounts import browser, invites, oidc
from api.accounts import views as accounts_views
from api.context import CSRF_HEADER, EXTENSION, SECURE_SESSION_COOKIE, SESSION_COOKIE
from api.docs.event_schemas import register_event_schemas
from api.errors import register_error_handlers
from api.events import register_events
from api.extensions import EonyxApi, FastJSONProvider
from api.facade import anthropic as facade_anthropic
from api.facade import models as facade_models
from api.facade import views as facade_views
from api.facade.anthropic_errors import register_messages_routing_errors
from api.facade.cors import register_cors
from api.facade.errors import register_routing_errors
from api.folders import ui_state
from api.folders import views as folders_views
from api.memory import views as memory_views
from api.models import views as models_views
from api.observability import register_observability
from api.paths import register_converters
from api.ratelimit import register_rate_limits
from api.security import register_security_headers
from api.sessions import bundles, images, likes, notes, shares, turns
from api.sessions import views as sessions_views
from api.slow_clients import body_deadline
from api.web import blp as web_blp
from shared.core.job_names import JobQueue
from shared.core.settings import Settings
from shared.runtime import Runtime

API_PREFIX = "/api/v1"
SECURITY_SCHEMES = {
    "bearerAuth": {"type": "http", "scheme": "bearer"},
    "cookieAuth": {
        "type": "apiKey",
        "in": "cookie",
        "name": SESSION_COOKIE,
        "description": (
            "A browser sign-in (POST /api/v1/auth/session); over https the cookie is named "
            f"{SECURE_SESSION_COOKIE}. POST, PUT, PATCH and DELETE "
            f"requests authenticated by it must also send {CSRF_HEADER}: the csrf_token "
            "of the sign-in, or they are refused with 403 csrf_failed."
        ),
    },
}


def create_app(settings: Settings, *, jobs_queue: JobQueue | None = None) -> Flask:
    app = Flask(__name__, static_folder=None)  # the web client serves /static (api/web)
    app.json = FastJSONProvider(app)
    app.config.update(
        MAX_CONTENT_LENGTH=settings.max_request_bytes,
        API_TITLE="Eonyx",
        API_VERSION="v1",
        OPENAPI_VERSION="3.0.3",
        OPENAPI_URL_PREFIX=API_PREFIX,
        OPENAPI_JSON_PATH="openapi.json",
        JSON_SORT_KEYS=False,
    )
    runtime = Runtime.build(settings, jobs=jobs_queue)
    app.extensions[EXTENSION] = runtime
    # Closed when the app is collected or, at the latest, when the process exits.
    weakref.finalize(app, runtime.close)
    register_observability(app, runtime)  # first: the request id is set before anything logs
    register_api(app)
    register_error_handlers(app)
    register_cors(app)  # before the rate limits: a preflight spends no budget
    register_messages_routing_errors(app)  # /v1/messages' 404 and 405 in Anthropic's shape, first
    register_routing_errors(app)  # /v1's 404 and 405 in OpenAI's shape
    app.register_blueprint(health.blp)
    app.register_blueprint(teams.blp)
    register_events(app)
    app.register_blueprint(docs.blp, url_prefix=API_PREFIX)
    register_security_headers(app)
    app.register_blueprint(web_blp)
    register_rate_limits(app, runtime)  # last: its check runs after the other before-request hooks
    app.wsgi_app = body_deadline(app.wsgi_app, settings.request_body_seconds)  # type: ignore[method-assign, assignment]
    return app


def register_api(app: Flask) -> None:
    api = EonyxApi(
        app,
        spec_kwargs={
            "components": {"securitySchemes": SECURITY_SCHEMES},
            "security": [{"bearerAuth": []}, {"cookieAuth": []}],
        },
    )
    register_converters(app, api)
    for blueprint in (
        accounts_views.blp,
        browser.blp,
        oidc.blp,
        invites.blp,
        sessions_views.blp,
        turns.blp,
        likes.blp,
        notes.blp,
        images.blp,
        bundles.blp,
        shares.blp,
        folders_views.blp,
        ui_state.blp,
        memory_views.blp,
        models_views.blp,
        jobs.blp,
        usage.blp,
        settings_views.blp,
        groups.blp,
    ):
        api.register_blueprint(blueprint, url_prefix=API_PREFIX)
    # The OpenAI-compatible facade lives where OpenAI clients look for it: /v1, not /api/v1.
    api.register_blueprint(facade_views.blp)
    api.register_blueprint(facade_models.blp)
    api.register_blueprint(facade_anthropic.blp)  # Anthropic's Messages API, for its clients
    register_event_schemas(api.spec)  # what the events socket and a streamed turn send
