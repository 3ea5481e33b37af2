"""The HTTP layer: the app factory (api/app.py), blueprints, schemas, authentication.

Nothing is imported here: gunicorn's master process imports api.gunicorn_conf and
api.gunicorn_logging, and whatever it imports is in place, unpatched, before each worker
patches the standard library for gevent. The factory is `api.app.create_app`.
"""
