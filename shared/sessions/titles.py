"""Session titles, in the mode SESSION_TITLE_MODE names, or without it the mode of the
session's source (`mode_for`): `sequential` for the console clients' (source `cli`), as the
first spec gives every new session, `truncate` for the others.

- `truncate` (the default): the first message, cut to TRUNCATE_CHARS, set by the first turn.
- `sequential`: `1`, `2`, `3`… per user, given when the session is created. The counter is a
  small file per user (`users/<id>/session-numbers.json`), advanced under a lock.
- `llm`: the session is listed at once with `title_pending: true`; the first turn sets the
  truncated title as the fallback, and once the first answer is saved a worker
  (`eonyx.sessions.title`) asks the `session_title` role for a short name of the opening
  exchange, cleans it (reasoning blocks, quotes, markdown) and bounds it, writes it and pushes
  `session.title`. Every failure (model error, empty or unusable reply, a first reply that
  failed or was stopped, no queue) keeps the truncated title and ends `title_pending`; a
  sweep re-sends a lost job and, past GIVE_UP_AFTER, ends the wait without the model.

An explicit rename is final: it sets `title_locked`, and no mode or job changes the title
after it (the job is in title_job.py).

A title the first message set (truncated, or named by the model from it) is marked
`title_from_opening`; when an edit replaces that first message, the session is titled
again as a new one is, from the new opening (`first_message_changes`). A title given when
the session was made, or by a rename, is the user's and stays.
"""

from __future__ import annotations

import json
import re
from typing import Any

from shared.core import registry
from shared.core.messages import JobMessage, content_text, is_final_answer, job_prompt
from shared.core.settings import Settings
from shared.core.text import strip_forbidden
from shared.files.filestore import atomic_write
from shared.files.session_store import SessionState
from shared.index.listing import CONSOLE_SOURCE
from shared.sessions.needs import SessionsRuntime

TITLE_LOCKED = "title_locked"  # set by an explicit rename: no mode or job changes it after
FROM_OPENING = "title_from_opening"  # meta: the first message set the title (a mode, a job)
TRUNCATE_CHARS = 60
LLM_TITLE_CHARS = 80
EXCHANGE_CHARS = 2000  # of each message of the opening exchange sent to the model

INSTRUCTIONS = (
    "Name this conversation for a list of chats: at most six words, in the language of the "
    "user's message. Answer with the title only: no quotes, no markdown, no final period."
)


def truncate_title(content: str) -> str:
    """The first words of a message as its title: one line of plain text (no Markdown marks,
    seen before as `**tea party**` in the list), without what the text rule refuses (the
    message itself is kept exactly)."""
    lines = [_LEADING.sub("", line.strip()) for line in content.splitlines()]
    plain = " ".join(markdown_marks_out("\n".join(lines)).split())
    title = " ".join(strip_forbidden(plain or content, single_line=True).split())
    return title if len(title) <= TRUNCATE_CHARS else title[: TRUNCATE_CHARS - 1].rstrip() + "…"


def markdown_marks_out(text: str) -> str:
    """Text as a title shows it: a link as its text, without emphasis and code marks or the
    lines that open and close a code block."""
    text = _FENCE.sub(" ", text)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # [text](link) -> text
    return _PAIRED.sub(lambda found: found.group(2), text)  # **a**, *a*, `a`, ~~a~~ -> a


def is_locked(state: SessionState) -> bool:
    """An explicit rename is final: no title job or mode changes the title after it."""
    return state.title_locked


def mode_for(settings: Settings, source: str) -> str:
    """The title mode of a session from `source`: SESSION_TITLE_MODE (or an administrator's
    run-time `session_title_mode`: pass the live settings) when it is set."""
    if settings.session_title_mode:
        return settings.session_title_mode
    return "sequential" if source == CONSOLE_SOURCE else "truncate"


def for_new_session(
    rt: SessionsRuntime, user_id: str, title: str | None, temporary: bool, source: str
) -> str | None:
    """The title of a session being created without or with a title. None waits for the
    first message (`first_message_changes`: truncated, or pending the model's in `llm`
    mode); a session waiting for its first message has no title pending."""
    mode = mode_for(rt.live_settings.settings(), source)
    if title is None and not temporary and mode == "sequential":
        return str(next_number(rt, user_id))
    return title


def next_number(rt: SessionsRuntime, user_id: str) -> int:
    """The user's next sequential title: 1 for their first session, never given twice."""
    path = rt.store.sessions_dir(user_id).parent / "session-numbers.json"
    with rt.locks.hold(registry.SESSION_NUMBERS_LOCK + user_id, wait=10, ttl=30):
        try:
            last = int(json.loads(path.read_bytes()).get("last", 0))
        except (FileNotFoundError, ValueError, AttributeError, TypeError):
            last = 0
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps({"last": last + 1}).encode())
    return last + 1


def first_message_changes(
    rt: SessionsRuntime, state: SessionState, content: str | None
) -> dict[str, Any]:
    """What the first message of a session sets: the truncated title (in `llm` mode the
    fallback shown while the model names the session, marked pending). `state` is the
    session the message follows: one whose first message an edit replaced has none left,
    and is titled again if its title came from that message."""
    mode = mode_for(rt.live_settings.settings(), state.source)
    if not content or is_locked(state) or mode == "sequential":
        return {}
    if state.title and not (state.meta.get(FROM_OPENING) is True and not _has_opening(state)):
        return {}
    changes: dict[str, Any] = {"title": truncate_title(content), FROM_OPENING: True}
    if mode == "llm" and not state.temporary:
        changes["title_pending"] = True
    return changes


def _has_opening(state: SessionState) -> bool:
    return any(message.get("role") == "user" for message in state.messages)


# -- the llm mode ------------------------------------------------------------------------------


_TAGS = "think|thinking|reasoning|reflection"
_FLAGS = re.IGNORECASE | re.DOTALL
_REASONING = re.compile(rf"<({_TAGS})>.*?</\1>", _FLAGS)
_UNCLOSED = re.compile(rf"<({_TAGS})>.*", _FLAGS)
_CLOSER = re.compile(rf"^.*</({_TAGS})>", _FLAGS)
_LABEL = re.compile(r"^(chat\s+)?(title|name|subject)\s*[:：-]\s*", flags=re.IGNORECASE)
_LEADING = re.compile(r"^(#{1,6}\s+|[-*+]\s+|\d+[.)]\s+|>\s*)+")
# A mark, its text, the same mark; not inside a word (2*3 = 6 keeps its star).
_PAIRED = re.compile(r"(?<![\w*`~])(\*\*|__|\*|`+|~~)(\S(?:.*?\S)?)\1(?![\w*`~])")
_FENCE = re.compile(r"^[ \t]*(```|~~~).*$", re.MULTILINE)
_WRAPPERS = "\"'`*_~“”‘’«»„‚「」『』"


def clean_reply(reply: str) -> str | None:
    """The title in a model's reply, or None when there is none: reasoning blocks (closed,
    unclosed, or only their end tag left), a `Title:` label, markdown and quotes removed, one
    line, bounded to LLM_TITLE_CHARS at a word."""
    text = _REASONING.sub(" ", reply)
    text = _CLOSER.sub(" ", text)  # "...reasoning</think> Title": keep what follows
    text = _UNCLOSED.sub(" ", text)  # reasoning that never ended holds no title
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return None
    line = _LEADING.sub("", _LABEL.sub("", strip_forbidden(lines[0], single_line=True)))
    line = markdown_marks_out(line)
    line = " ".join(line.split()).strip(_WRAPPERS + " ").rstrip(".:;,!。 ").strip(_WRAPPERS + " ")
    if not line:
        return None
    if len(line) > LLM_TITLE_CHARS:
        cut = line[: LLM_TITLE_CHARS - 1]
        line = (cut.rsplit(" ", 1)[0] if " " in cut else cut).rstrip(" ,;:-") + "…"
    return line


def answered(state: SessionState) -> bool:
    """Whether the session has a final answer (an assistant message that calls no tool)."""
    return any(is_final_answer(message) for message in state.messages)


def opening_exchange(state: SessionState) -> tuple[str, str] | None:
    """The first user message and the first final answer after it, as text; None when the
    session has no answered first message."""
    user = None
    for message in state.messages:
        role = message.get("role")
        if role == "user" and user is None:
            user = content_text(message.get("content")).strip()
        elif user is not None and is_final_answer(message):
            answer = content_text(message.get("content")).strip()
            return (user, answer) if user and answer else None
    return None


def title_request(user: str, answer: str) -> list[JobMessage]:
    exchange = f"User:\n{user[:EXCHANGE_CHARS]}\n\nAssistant:\n{answer[:EXCHANGE_CHARS]}"
    return job_prompt(INSTRUCTIONS, exchange)
