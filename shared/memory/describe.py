"""One line saying what a memory write did: for the model (the memory tools' results) and for
clients (the notices of `memory_write` stream events). Imports nothing, so a client command
can use it without loading the server's stack."""

from __future__ import annotations

from collections.abc import Mapping


def describe_write(file_name: str, what: Mapping[str, object]) -> str:
    """One line saying what a memory write did (for the model, and for clients' notices)."""
    action = what["action"]
    if action == "consolidated":
        return f"rewrote {file_name} as {what['entries']} entries"
    if action == "replaced":
        return f"replaced {what['previous']!r} with {what['entry']!r} in {file_name}"
    preposition = "to" if action == "added" else "from"
    return f"{action} {what['entry']!r} {preposition} {file_name}"
