"""Notes an outside agent leaves in the user's sessions (a coding agent over MCP).

A note is appended to a session the agent names (one of the caller's own: another user's is
not found) or, without one, to the session of the agent's working directory: one session of
source `mcp` per directory, bound like a Teams conversation (shared.integrations.bindings)
and made on the first note. A note is a user message named `mcp`, its text prefixed with
who left it, so that it reads as what it is in the transcript, is found by search, and a
model continuing the session sees it as input from outside, never as its own words.

A note waits a little for a turn running in the session (`NOTE_WAIT`), then is refused as
busy: slipping between a turn's tool calls and their results would break the conversation.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from shared.accounts.people import Principal
from shared.core import text
from shared.core.errors import InvalidInput
from shared.core.messages import message_record
from shared.db.orm import SessionRow
from shared.integrations import bindings
from shared.integrations.needs import IntegrationsRuntime
from shared.sessions import service
from shared.sessions.turn_lock import hold_turn_lock

SOURCE = CHANNEL = "mcp"  # the notebooks' source, and their bindings' channel
NOTE_MAX = 20_000
WORKDIR_MAX = 4096
AGENT_MAX = 100
NOTE_WAIT = 10.0  # seconds a note waits for a running turn
NOTE_NAME = "mcp"  # the `name` of a note's message record
TITLE_NAME_MAX = 100  # of a directory's name, in its notebook's title


@dataclass(frozen=True)
class Noted:
    session: SessionRow
    message_id: str
    created: bool  # a working directory's session made by this note


def append_note(
    rt: IntegrationsRuntime,
    principal: Principal,
    note: str,
    *,
    session_id: str | None = None,
    workdir: str | None = None,
    agent: str | None = None,
) -> Noted:
    """Append `note` to the caller's session `session_id`, or else to the session of
    `workdir` (made on the first note). Exactly one of them is needed."""
    body = _clean(note, "note", NOTE_MAX, single_line=False)
    who = _clean(agent, "agent", AGENT_MAX) if agent else "a coding agent"
    created = False
    if session_id is None:
        if not workdir:
            raise InvalidInput("a note needs a session_id or the agent's workdir", param="workdir")
        directory = _clean(workdir, "workdir", WORKDIR_MAX)
        session_id, created = bindings.bound_session(
            rt,
            principal,
            CHANNEL,
            bindings.digest(directory),
            lambda: _notebook(rt, principal, directory),
        )
    row = service.get_session(rt, principal, session_id)  # another user's: not found
    service.refuse_in_trash(row)
    record = message_record("user", f"Note from {who}: {body}", name=NOTE_NAME)
    with hold_turn_lock(rt, session_id, wait=NOTE_WAIT):
        row = service.append_records(rt, principal, session_id, [record])
    return Noted(row, record["id"], created)


def _notebook(rt: IntegrationsRuntime, principal: Principal, directory: str) -> str:
    name = posixpath.basename(directory.replace("\\", "/").rstrip("/")) or directory
    title = service.clean_title(f"Notes: {name[:TITLE_NAME_MAX]}")
    return service.create_session(rt, principal, rt.memory, title=title, source=SOURCE).id


def _clean(value: str, field: str, limit: int, *, single_line: bool = True) -> str:
    text.check(value, field, single_line=single_line)
    value = value.strip()
    if not value:
        raise InvalidInput(f"{field} is empty", param=field)
    if len(value) > limit:
        raise InvalidInput(f"{field} is over {limit:,} characters", param=field)
    return value
