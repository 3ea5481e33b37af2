"""Gunicorn settings for the Eonyx API: `gunicorn -c deploy/gunicorn.conf.py`.

The values, and why each is what it is, live in api/gunicorn_conf.py, which `eonyx serve`
uses too: one gevent configuration for the compose stack and the one-command start. Every
value can be overridden from the environment (see deploy/env.example); flags given on the
gunicorn command line beat this file.
"""

import os

from api.gunicorn_conf import gunicorn_settings

globals().update(gunicorn_settings(os.environ))
