"""The Eonyx domain: everything that is neither HTTP (api/) nor queue plumbing (workers/).

Nothing in this package imports Flask or Celery, so a view, a task, the CLI and a test
can all call the same functions.
"""
