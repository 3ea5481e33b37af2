"""WSGI entry point for gunicorn: `gunicorn api.wsgi:app` (settings from the environment).

This module is the composition root of an API process: it sets up logging, builds the Celery
queue the API sends jobs to and hands it to the app factory.
"""

from api import create_app
from shared.core import logs
from shared.core.settings import load_settings
from shared.files import permissions
from workers.queue import celery_jobs

settings = load_settings()
permissions.private_umask()  # what this process creates in the store is its owner's only
logs.configure(settings)
app = create_app(settings, jobs_queue=celery_jobs(settings))
