"""What the background memory jobs (extraction, curation) share: asking the model of their
role, reading the JSON in its answer, the transcript they send it, what a run did, and the
sessions their sweeps look at.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import false, select

from shared.core import observability
from shared.core.messages import Exchange, JobMessage, content_text
from shared.db.orm import SessionRow
from shared.llm import models
from shared.llm.client import LLMError
from shared.memory.needs import MemoryRuntime

MESSAGE_CHARS = 4_000  # per message sent to the model
TOTAL_CHARS = 16_000  # all messages of one request together
SWEEP_WINDOW = timedelta(days=1)


class ModelFailed(Exception):
    """The role's model could not answer. `str()` is safe to show its user (never the
    provider's text: api/errors.py says why); `logged` has the details, for the log."""

    def __init__(self, public: str, logged: str) -> None:
        super().__init__(public)
        self.logged = logged


class OverBudget(ModelFailed):
    """The user the job serves used their month's tokens: the job waits (its sweep sends it
    again) or does without, rather than spending more."""


def ask_role(rt: MemoryRuntime, role: str, messages: list[JobMessage], user_id: str) -> str | None:
    """The text of the answer of the model assigned to `role` (the chat's own when none is),
    counted against `user_id`, or ModelFailed: no model configured, an error, a timeout, or
    OverBudget when the user's token budget is used up."""
    if not rt.usage.allows(user_id):
        said = "your monthly token budget is used up; this waits until it resets"
        raise OverBudget(said, said)
    try:
        offering = models.offering_for(rt, role)
        return rt.llm.complete(offering, messages, user_id=user_id).content
    except models.NoModel as exc:
        raise ModelFailed(exc.message, exc.message) from exc
    except LLMError as exc:
        public = exc.public_message(observability.current_request_id())
        raise ModelFailed(public, exc.message) from exc


@dataclass(frozen=True)
class Outcome:
    """What a background memory job did: `saved`, `unchanged`, `ignored`, `skipped` or
    `failed`, with a sentence saying why."""

    status: str
    detail: str = ""
    marker: int | None = None  # extraction: the turns done after this run
    changes: int | None = None  # curation: how many entries were added, modified or removed

    def to_dict(self) -> dict[str, object]:
        """The job's result, as JSON."""
        return asdict(self)


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def transcript(
    turns: list[Exchange], *, per_message: int = MESSAGE_CHARS, total: int = TOTAL_CHARS
) -> str:
    """`User: ...` / `Assistant: ...` lines for `turns`, each message clipped to `per_message`
    characters; over `total`, the oldest messages are left out (newer ones matter more)."""
    lines: list[str] = []
    for turn in turns:
        lines.append("User: " + clip(content_text(turn.user.get("content")).strip(), per_message))
        if turn.answer is not None:
            text = clip(content_text(turn.answer.get("content")).strip(), per_message)
            lines.append("Assistant: " + text)
    kept: list[str] = []
    room = total
    for line in reversed(lines):
        if len(line) > room:
            if room > 200:
                kept.append(clip(line, room))
            break
        kept.append(line)
        room -= len(line)
    return "\n\n".join(reversed(kept))


def parse_json_answer(content: str | None) -> Any:
    """The JSON object in a model's answer (tolerating a code fence or a sentence around
    it); None when there is none."""
    text = (content or "").strip()
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        return json.loads(text[start : end + 1])
    except ValueError:
        return None


def recent_sessions(rt: MemoryRuntime, *, min_messages: int = 0) -> list[tuple[str, str]]:
    """(user id, session id) of non-temporary sessions the index shows updated lately."""
    since = rt.clock.now() - SWEEP_WINDOW
    query = select(SessionRow.user_id, SessionRow.id).where(
        SessionRow.temporary == false(),
        SessionRow.updated_at >= since,
        SessionRow.message_count >= min_messages,
    )
    with rt.db.session() as db:
        return [(user_id, session_id) for user_id, session_id in db.execute(query)]
