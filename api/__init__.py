"""The HTTP layer: the app factory (api/app.py), blueprints, schemas, authentication.

Importing the package loads none of the app: gunicorn's master process imports
api.gunicorn_conf and api.gunicorn_logging, and whatever it imports is in place, unpatched,
before each worker patches the standard library for gevent. So the factory is reached
through this module's `__getattr__` (`from api import create_app` works as ever).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from api.app import create_app

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from api.app import create_app

        return create_app
    raise AttributeError(f"module 'api' has no attribute {name!r}")
