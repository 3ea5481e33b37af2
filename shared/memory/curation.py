"""Remember this turn: a like on a message distills its turn into the agent memory (MEMORY.md).

A like on either message of a turn (the user's message, or the assistant's final answer)
stands for the exchange, keyed by the user message's id. Liking records the like in the session
file (a meta record `{"likes": {exchange_id: {...}}}`, status `saving`), enqueues
`eonyx.memory.curate(user_id, session_id, exchange_id)` and pushes `like.updated`. Liking the
other message of the exchange, or liking again, starts nothing new while the exchange is `saving` or
`saved`; a `failed` like is retried by liking it again.

The job asks the `agent_memory_curation` model once, with the exchange and the current entries,
for operations (add / modify / remove) and applies them all or nothing through
`MemoryStore.update` (filter, cap, backup, atomic replace, lock). Adds of entries already
saved are dropped rather than failing the batch. The like ends `saved` (possibly with no
change, when nothing was worth keeping) or `failed` (model error, unparsable answer, refused
by the filter or the cap), recorded in the session and pushed as `like.updated`; a write
also pushes `memory.updated`. A retried job for an exchange no longer `saving` does nothing.
Curation never touches USER.md. Unliking removes the like, not what was remembered.

An answer regenerated, or a turn edited away, takes its like out of the conversation
(`current_likes`): the like stays in the file but is not listed, the exchange's new answer
can be liked afresh, and a job that had not run yet ends it `failed`, unannounced.

Temporary chats and demo mode (and AGENT_MEMORY_ENABLED=false) refuse the like with a 4xx:
nothing is recorded, nothing is enqueued, MEMORY.md stays as it is.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TypedDict

from shared.accounts.people import Principal
from shared.core import registry
from shared.core.clock import isoformat, parse_time, utcnow
from shared.core.errors import Conflict, Forbidden, InvalidInput, NotFound, Unavailable
from shared.core.events import LikeUpdated, MemoryUpdated
from shared.core.job_names import CURATE_MEMORY, JobQueue
from shared.core.messages import Exchange, JobMessage, exchanges, in_tool_step, job_prompt
from shared.files.session_store import SessionState
from shared.infra import event_bus
from shared.infra.lost_jobs import JOB_LOCK_TTL, JOB_LOCK_WAIT, LOST_AFTER, job_running, resend
from shared.memory import background
from shared.memory.background import Outcome
from shared.memory.entry import WriteDone
from shared.memory.files import AGENT_MEMORY, MemoryRefused, StaleVersion, render_entries
from shared.memory.needs import MemoryRuntime
from shared.memory.tools import apply_batch
from shared.sessions import service as session_service
from shared.sessions.transcript import LIKES, Like, current_likes, likes_of

log = logging.getLogger(__name__)
SAVING, SAVED, FAILED = "saving", "saved", "failed"
LIKE_LOCK_WAIT = 30
LIKE_LOCK_TTL = 15  # seconds a dead holder blocks the session's likes (kept alive while held)

INSTRUCTIONS = """\
You curate an assistant's notes about the user's work (MEMORY.md): durable, reusable facts \
about their environment and projects, such as conventions ("this project uses pnpm"), \
commands ("run tests with uv run pytest"), tool quirks and stable operating rules.

The user marked one exchange as worth remembering. Decide what from it belongs in the notes \
and answer with the changes as JSON only:
{{"operations": [
  {{"action": "add", "content": "<a new entry>"}},
  {{"action": "modify", "old_text": "<a unique part of an existing entry>", \
"content": "<that entry's new text>"}},
  {{"action": "remove", "old_text": "<a unique part of an entry that no longer holds>"}}
]}}

Rules: one short, self-contained fact per entry; modify an entry that changed instead of \
adding a second one; do not repeat what the notes already say; nothing about the user's \
personal preferences (they are kept elsewhere), nothing one-off or only about this \
conversation; never secrets, passwords, keys or personal data. Keep the notes under {limit} \
characters. If nothing is worth keeping, answer {{"operations": []}}."""


# -- likes in the session ----------------------------------------------------------------------


def exchange_of(state: SessionState, message_id: str) -> Exchange:
    """The turn a message belongs to, for a like: its user message or its final answer."""
    for message in state.messages:
        if message.get("id") != message_id:
            continue
        if in_tool_step(message):
            raise InvalidInput(
                "only a user message or the assistant's final answer can be liked",
                code="not_likeable",
            )
        for turn in exchanges(state.messages):
            if message_id in (turn.user.get("id"), (turn.answer or {}).get("id")):
                if turn.answer is None:
                    raise Conflict("this turn has no answer yet", code="turn_unanswered")
                return turn
        break
    raise NotFound(f"no message {message_id!r} in this session")


class LikeStatus(TypedDict):
    """A like as its API and its live event show it."""

    pair_id: str
    message_ids: list[str]
    status: str | None
    detail: str | None
    changes: int | None


def _public(exchange_id: str, like: Like | None) -> LikeStatus:
    like = like or {}
    return {
        "pair_id": exchange_id,
        "message_ids": like.get("message_ids", [exchange_id]),
        "status": like.get("status"),
        "detail": like.get("detail"),
        "changes": like.get("changes"),
    }


def _push(
    rt: MemoryRuntime, user_id: str, session_id: str, exchange_id: str, like: Like | None
) -> None:
    event_bus.publish(rt.redis, user_id, LikeUpdated(session_id, **_public(exchange_id, like)))


def _set_like(
    rt: MemoryRuntime, user_id: str, session_id: str, exchange_id: str, like: Like | None
) -> None:
    """Record one exchange's like (None: remove it). The caller holds the session's like lock:
    the meta record carries the whole map, so writers must not interleave."""
    state, _ = rt.store.load(user_id, session_id, keep_messages=False)
    likes = likes_of(state)
    if like is None:
        likes.pop(exchange_id, None)
    else:
        likes[exchange_id] = like
    session_service.append_meta(rt, user_id, session_id, {LIKES: likes})


def _like_lock(session_id: str) -> str:
    return registry.LIKES_LOCK + session_id


def _curate_lock(session_id: str, exchange_id: str) -> str:
    return f"{registry.CURATE_LOCK}{session_id}:{exchange_id}"


def check_allowed(rt: MemoryRuntime, state: SessionState) -> None:
    if rt.settings.demo_mode:
        raise Forbidden("turns are not remembered in demo mode", code="demo_mode")
    if not rt.live_settings.settings().agent_memory_enabled:
        raise Conflict("agent memory is switched off", code="agent_memory_disabled")
    if state.temporary:
        raise Conflict("a temporary chat is never remembered", code="temporary_chat")


def like_message(
    rt: MemoryRuntime, principal: Principal, session_id: str, message_id: str
) -> tuple[LikeStatus, bool]:
    """Like a message's turn; returns (the like, whether a curation was started)."""
    session_service.get_session(rt, principal, session_id)  # another user's: not found
    user_id = principal.user_id
    with rt.locks.hold(
        _like_lock(session_id), wait=LIKE_LOCK_WAIT, ttl=LIKE_LOCK_TTL, keepalive=True
    ):
        state, _ = rt.store.load(user_id, session_id)
        check_allowed(rt, state)
        turn = exchange_of(state, message_id)
        exchange_id = turn.user["id"]
        current = current_likes(state).get(exchange_id)  # a regenerated answer's is no more
        if current and current.get("status") in (SAVING, SAVED):
            return _public(exchange_id, current), False
        if rt.jobs is None:
            raise Unavailable("no worker queue is configured to remember turns", code="no_queue")
        now = isoformat(utcnow())
        like: Like = {
            "status": SAVING,
            "message_ids": [exchange_id, turn.answer["id"]],  # type: ignore[index]
            "liked_at": now,
            "updated_at": now,
        }
        _set_like(rt, user_id, session_id, exchange_id, like)
    # Recorded first: if this send is lost, the sweep finds the like still saving.
    rt.hint(CURATE_MEMORY, user_id, session_id, exchange_id)
    _push(rt, user_id, session_id, exchange_id, like)
    return _public(exchange_id, like), True


def unlike_message(
    rt: MemoryRuntime, principal: Principal, session_id: str, message_id: str
) -> None:
    """Remove the like of a message's turn; what was remembered stays in MEMORY.md."""
    session_service.get_session(rt, principal, session_id)
    user_id = principal.user_id
    with rt.locks.hold(
        _like_lock(session_id), wait=LIKE_LOCK_WAIT, ttl=LIKE_LOCK_TTL, keepalive=True
    ):
        state, _ = rt.store.load(user_id, session_id)
        exchange_id = exchange_of(state, message_id).user["id"]
        if exchange_id not in current_likes(state):
            return
        _set_like(rt, user_id, session_id, exchange_id, None)
    _push(rt, user_id, session_id, exchange_id, None)


# -- the job -----------------------------------------------------------------------------------


def curation_request(entries: list[str], turn: Exchange, limit: int) -> list[JobMessage]:
    notes = render_entries(entries).strip() or "(empty)"
    exchange = background.transcript([turn])
    return job_prompt(
        INSTRUCTIONS.format(limit=limit),
        f"Current notes (MEMORY.md):\n<notes>\n{notes}\n</notes>\n\n"
        f"The exchange to remember:\n<exchange>\n{exchange}\n</exchange>",
    )


def parse_operations(content: str | None) -> list[Mapping[str, object]] | None:
    """The model's operations as it wrote them (checked one by one when applied)."""
    data = background.parse_json_answer(content)
    if not isinstance(data, dict) or not isinstance(data.get("operations"), list):
        return None
    operations: list[object] = data["operations"]
    objects: list[Mapping[str, object]] = [op for op in operations if isinstance(op, dict)]
    return objects if len(objects) == len(operations) else None


def _without_repeats(
    entries: list[str], operations: list[Mapping[str, object]]
) -> list[Mapping[str, object]]:
    """Drop adds of an entry already saved (or added earlier in the batch)."""
    seen = {e.casefold() for e in entries}
    kept = []
    for op in operations:
        content = op.get("content")
        if op.get("action") == "add" and isinstance(content, str):
            key = " ".join(content.split()).casefold()
            if key in seen:
                continue
            seen.add(key)
        kept.append(op)
    return kept


def curate_exchange(rt: MemoryRuntime, user_id: str, session_id: str, exchange_id: str) -> Outcome:
    """Distill a liked turn into MEMORY.md (see the module doc). Idempotent."""
    with rt.locks.hold(
        _curate_lock(session_id, exchange_id), wait=JOB_LOCK_WAIT, ttl=JOB_LOCK_TTL, keepalive=True
    ):
        try:
            state, _ = rt.store.load(user_id, session_id)
        except NotFound:
            return Outcome("skipped", "the session is gone")
        like = likes_of(state).get(exchange_id)
        if like is None:
            return Outcome("skipped", "the like was removed")
        if like.get("status") != SAVING:
            return Outcome("skipped", f"this turn is already {like.get('status')}")
        if exchange_id not in current_likes(state):  # regenerated or edited before it was saved
            detail = "the liked answer was replaced before it was remembered"
            # Not pushed: the exchange's user message may hold a new answer, not liked.
            return _finish(rt, user_id, session_id, exchange_id, FAILED, detail, push=False)
        try:
            check_allowed(rt, state)
            turn = exchange_of(state, exchange_id)
        except (Conflict, Forbidden, InvalidInput, NotFound) as exc:
            return _finish(rt, user_id, session_id, exchange_id, FAILED, exc.message)
        outcome = _curate(rt, user_id, turn)
        status = FAILED if outcome.status == "failed" else SAVED
        return _finish(rt, user_id, session_id, exchange_id, status, outcome.detail, outcome)


def _curate(rt: MemoryRuntime, user_id: str, turn: Exchange) -> Outcome:
    before = rt.memory.read(AGENT_MEMORY, user_id)
    try:
        answer = background.ask_role(
            rt,
            "agent_memory_curation",
            curation_request(before.entries, turn, before.limit),
            user_id,
        )
    except background.ModelFailed as exc:  # the like's detail is shown to its user: the public text
        log.warning("curation failed for user %s: %s", user_id, exc.logged)
        return Outcome("failed", f"the model failed: {exc}")
    operations = parse_operations(answer)
    if operations is None:
        return Outcome("failed", "the model's answer was not a JSON list of operations")
    done: list[WriteDone] = []

    def change(entries: list[str]) -> list[str]:
        wanted = _without_repeats(entries, operations)
        if not wanted:
            return entries
        new, steps = apply_batch(entries, wanted)
        done[:] = steps
        return new

    try:
        rt.memory.update(AGENT_MEMORY, user_id, change)
    except (MemoryRefused, InvalidInput, StaleVersion) as exc:
        return Outcome("failed", f"not saved: {exc.message}")
    for what in done:
        event_bus.publish(rt.redis, user_id, MemoryUpdated.written("MEMORY.md", what))
    if not done:
        return Outcome("unchanged", "nothing in this turn was worth keeping")
    return Outcome("saved", f"{len(done)} change(s) to MEMORY.md", changes=len(done))


def _finish(
    rt: MemoryRuntime,
    user_id: str,
    session_id: str,
    exchange_id: str,
    status: str,
    detail: str,
    outcome: Outcome | None = None,
    *,
    push: bool = True,
) -> Outcome:
    """Record the like's final status (unless it was removed meanwhile) and push it."""
    with rt.locks.hold(
        _like_lock(session_id), wait=LIKE_LOCK_WAIT, ttl=LIKE_LOCK_TTL, keepalive=True
    ):
        state, _ = rt.store.load(user_id, session_id, keep_messages=False)
        like = likes_of(state).get(exchange_id)
        if like is not None:
            like = {**like, "status": status, "updated_at": isoformat(utcnow())}
            like["detail"] = detail if status == FAILED else None
            like["changes"] = (outcome.changes or 0) if outcome and status == SAVED else 0
            _set_like(rt, user_id, session_id, exchange_id, like)
    if like is not None and push:
        _push(rt, user_id, session_id, exchange_id, like)
    return outcome or Outcome("failed", detail)


# -- the sweep ---------------------------------------------------------------------------------


def sweep_likes(rt: MemoryRuntime, jobs: JobQueue) -> int:
    """Re-send curation for likes still `saving` LOST_AFTER after they were made whose job is
    not running (a lost job; see extraction's module doc for the timings)."""
    cutoff = rt.clock.now() - LOST_AFTER
    sent = 0
    for user_id, session_id in background.recent_sessions(rt, min_messages=2):
        try:
            state, _ = rt.store.load(user_id, session_id, keep_messages=False)
        except (NotFound, InvalidInput):
            continue
        for exchange_id, like in likes_of(state).items():
            if like.get("status") != SAVING:
                continue
            try:
                stale = parse_time(like.get("updated_at") or "") < cutoff
            except ValueError:
                stale = True
            if not stale or job_running(rt.locks, _curate_lock(session_id, exchange_id)):
                continue
            key = f"{CURATE_MEMORY}:{session_id}:{exchange_id}"
            if resend(rt.redis, jobs, key, CURATE_MEMORY, user_id, session_id, exchange_id):
                sent += 1
    return sent
