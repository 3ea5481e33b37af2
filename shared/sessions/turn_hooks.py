"""What happens after a turn, registered by the packages it concerns.

The turn (shared/chat/turns.py) ends by calling each hook with the `EndedTurn`; it knows
none of them. The composition root (shared/runtime.py) registers them, as it registers the
memory tools: the session's title (shared/sessions/title_job.py), a summary prepared ahead
of need (shared/chat/context.py) and memory extraction (shared/memory/extraction.py). A
hook sends work on (a job, a push); it never fails the turn, whose records are saved.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from shared.files.session_store import SessionState

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EndedTurn:
    """A turn whose message was saved: answered, or failed or stopped before its answer."""

    user_id: str
    state: SessionState  # the session as the turn left it
    answered: bool
    answered_before: bool  # the session had a final answer before this turn
    context_over_threshold: bool = False  # the history nears the model's window


AfterTurn = Callable[[EndedTurn], None]


class TurnHooks:
    def __init__(self) -> None:
        self._hooks: list[AfterTurn] = []

    def add(self, hook: AfterTurn) -> None:
        self._hooks.append(hook)

    def run(self, ended: EndedTurn) -> None:
        for hook in self._hooks:
            try:
                hook(ended)
            except Exception:  # the turn is saved; what a hook left undone, a sweep redoes
                log.exception("an after-turn hook failed for session %s", ended.state.id)
