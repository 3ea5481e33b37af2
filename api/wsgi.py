"""WSGI entry point for gunicorn: `gunicorn api.wsgi:app` (settings from the environment)."""

from api import create_app
from shared.core.settings import load_settings

app = create_app(load_settings())
