"""The domain of Eonyx, usable from a view, a task, the CLI and a test alike.

Sub-packages by concern, lowest first (import-linter keeps the order, see pyproject.toml):
core → storage → accounts (and backup, beside it) → llm → sessions → memory → chat → runtime.
A package imports only from those below it. Nothing here imports Flask, Celery, api/,
workers/ or cli/.
"""
