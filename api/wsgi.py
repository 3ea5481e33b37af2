"""WSGI entry point for gunicorn: `gunicorn api.wsgi:app` (settings from the environment).

This module is the composition root of an API process: it sets up logging, builds the Celery
queue the API sends jobs to and hands it to the app factory.
"""

import gc

from api.app import create_app
from shared.core import logs
from shared.core.settings import load_settings
from shared.files import permissions
from workers.queue import celery_jobs

settings = load_settings()
permissions.private_umask()  # what this process creates in the store is its owner's only
logs.configure(settings)
app = create_app(settings, jobs_queue=celery_jobs(settings))
# What the process has built so far (modules, the app, its schemas and runtime, about 200,000
# objects) lives as long as the process: out of the collector's sight, a full collection walks
# only what requests made since, not all of it again (about 120 ms, every thousand turns or so).
# Young collections start every 10,000 new objects rather than 700: a turn leaves few cycles,
# and under 16 concurrent turns the collector's CPU per turn halves (about 90 -> 40 us).
gc.freeze()
gc.set_threshold(10_000, 10, 10)
