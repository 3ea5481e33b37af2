"""Celery plumbing. Each task is a thin call into shared/."""
