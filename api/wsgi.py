"""WSGI entry point for gunicorn: `gunicorn api.wsgi:app` (settings from the environment).

This module is the composition root of an API process: it builds the Celery queue the API
sends jobs to and hands it to the app factory.
"""

from api import create_app
from shared.core.settings import load_settings
from workers.queue import celery_jobs

settings = load_settings()
app = create_app(settings, jobs_queue=celery_jobs(settings))
