"""The `llm` title mode's background half: the job that names a session, and its sweep.

The job writes only if the title is still pending and not locked by a rename, checked under
the session file's lock in the same step as the write (`SessionStore.append_if`), so a rename
made while the model is answering wins. Whatever happens, the job ends the pending state and
pushes `session.title` with the title the session keeps.

While it waits on the model the job holds the session's title lock, kept alive while its
worker lives. The sweep (every SWEEP_SECONDS) sends the job again for a title pending
LOST_AFTER whose lock nobody holds (a job lost with its worker, or never sent): such a
title is named within about a minute of the worker's death (shared/infra/lost_jobs.py).
A title still pending GIVE_UP_AFTER keeps its truncated title.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select, true

from shared.core import registry
from shared.core.clock import parse_time
from shared.core.errors import NotFound, StorageError
from shared.core.events import SessionTitle
from shared.core.job_names import SESSION_TITLE, JobQueue
from shared.core.messages import MetaRecord, meta_record
from shared.db.orm import SessionRow
from shared.files.session_store import SessionState
from shared.infra import event_bus
from shared.infra.lost_jobs import JOB_LOCK_TTL, JOB_LOCK_WAIT, LOST_AFTER, job_running, resend
from shared.llm import models
from shared.llm.client import LLMError
from shared.sessions import service
from shared.sessions.needs import SessionsRuntime
from shared.sessions.titles import clean_reply, is_locked, opening_exchange, title_request
from shared.sessions.turn_hooks import EndedTurn

log = logging.getLogger(__name__)
GIVE_UP_AFTER = timedelta(minutes=6)  # a title pending this long keeps the truncated title
SWEEP_BATCH = 100


def generate_title(rt: SessionsRuntime, user_id: str, session_id: str) -> dict[str, Any]:
    """The worker's job: name a pending session from its opening exchange, or end the
    pending state with the truncated title. Idempotent: a session no longer pending (named,
    renamed, given up on) is left alone; a duplicate waits for the job that runs."""
    with rt.locks.hold(
        title_lock(session_id), wait=JOB_LOCK_WAIT, ttl=JOB_LOCK_TTL, keepalive=True
    ):
        state, _ = rt.store.load(user_id, session_id)
        if not state.title_pending or is_locked(state):
            return {"written": False, "reason": "not pending"}
        exchange = opening_exchange(state)
        title, reason = None, None
        if exchange is None:
            reason = "the first reply has no text"
        elif not rt.usage.allows(user_id):
            reason = "the user's monthly token budget is used up"
        else:
            try:
                offering = models.offering_for(rt, "session_title")
                completion = rt.llm.complete(offering, title_request(*exchange), user_id=user_id)
                title = clean_reply(completion.content or "")
                reason = None if title else "the model's reply held no title"
            except (LLMError, models.NoModel) as exc:
                reason = f"the model failed: {exc}"
        if reason:
            log.info("session %s keeps its truncated title: %s", session_id, reason)
        written = finish(rt, user_id, session_id, title)
    return {"written": written, "title": title, "reason": reason}


def title_lock(session_id: str) -> str:
    return registry.TITLE_LOCK + session_id


def finish(
    rt: SessionsRuntime,
    user_id: str,
    session_id: str,
    title: str | None,
) -> bool:
    """End a pending title, with `title` or (None) keeping the one the session has; only if
    it is still pending and not renamed, decided under the file's lock. Pushes the result."""
    final: dict[str, Any] = {}

    def decide(state: SessionState) -> list[MetaRecord] | None:
        if not state.title_pending or is_locked(state):
            return None
        changes: dict[str, Any] = {"title_pending": False}
        if title:
            changes["title"] = title
        final["title"] = title or state.title
        return [meta_record(changes)]

    try:
        with service.SessionWriter(rt, user_id, session_id) as writer:
            written = writer.append_if(decide)
    except NotFound:
        return False  # deleted meanwhile
    if written is None:
        return False
    publish_title(rt, user_id, session_id, final["title"])
    return True


def after_turn(rt: SessionsRuntime, ended: EndedTurn) -> None:
    """The session's first answer is saved: a worker names the session (an answer without
    text, or no queue to send the job to, keeps the truncated title at once rather than a
    spinner). The first answer failed or was stopped: the spinner ends, the truncated
    title stays."""
    state = ended.state
    if ended.answered_before or not state.title_pending:
        return
    named = ended.answered and opening_exchange(state) is not None
    if named and rt.hint(SESSION_TITLE, ended.user_id, state.id):
        return
    finish(rt, ended.user_id, state.id, None)


def publish_title(rt: SessionsRuntime, user_id: str, session_id: str, title: str | None) -> None:
    """Tell the user's clients the title a session keeps now that it is no longer pending
    (named by the job, kept by the sweep, or ended by a turn whose first answer failed)."""
    event = SessionTitle(session_id, title)
    event_bus.publish(rt.redis, user_id, event)


def pending_since(state: SessionState) -> datetime:
    """When the title started waiting: the first message (which set it), else creation."""
    for message in state.messages:
        if message.get("role") == "user" and message.get("created_at"):
            return parse_time(message["created_at"])
    return state.created_at


def sweep_titles(rt: SessionsRuntime, jobs: JobQueue) -> dict[str, int]:
    """Titles left pending by a lost job or a worker that died mid-call: the job is sent
    again once the title has waited LOST_AFTER and no job holds its lock, and the truncated
    title is kept (pending ended without the model) once it has waited GIVE_UP_AFTER."""
    now = rt.clock.now()
    with rt.db.session() as db:
        candidates = db.execute(
            select(SessionRow.user_id, SessionRow.id)
            .where(
                SessionRow.title_pending == true(),
                SessionRow.message_count > 0,
                SessionRow.created_at < now - LOST_AFTER,
            )
            .limit(SWEEP_BATCH)
        ).all()
    report = {"resent": 0, "ended": 0}
    for user_id, session_id in candidates:
        try:
            state, _ = rt.store.load(user_id, session_id)
            if not state.title_pending or is_locked(state):
                continue
            waited = now - pending_since(state)
            if waited >= GIVE_UP_AFTER:
                report["ended"] += finish(rt, user_id, session_id, None)
            elif waited >= LOST_AFTER and not job_running(rt.locks, title_lock(session_id)):
                key = f"{SESSION_TITLE}:{session_id}"
                report["resent"] += resend(rt.redis, jobs, key, SESSION_TITLE, user_id, session_id)
        except (NotFound, StorageError) as exc:
            log.warning("cannot sweep the pending title of %s: %s", session_id, exc)
    return report
