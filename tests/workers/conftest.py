"""Worker tests drive an API app wired to the fake model, as the API tests do."""

from tests.api.conftest import make_chat

__all__ = ["make_chat"]  # a fixture for the worker tests
