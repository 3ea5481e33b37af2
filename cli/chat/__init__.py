"""`eonyx chat`: the full-screen terminal chat client (placeholder while it is built)."""

from __future__ import annotations

import click


@click.command()
def chat() -> None:
    """The terminal chat client."""
