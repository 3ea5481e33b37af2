"""Entry point for the `celery` command: `celery -A workers.celery_app worker`."""

from shared.core.settings import load_settings
from workers.app import create_celery

app = create_celery(load_settings())
