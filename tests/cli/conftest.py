"""Fixtures of the CLI tests: `start_serve` runs `eonyx serve` (tests/cli/serving.py)."""

from tests.cli.serving import start_serve

__all__ = ["start_serve"]
