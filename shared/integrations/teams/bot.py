"""A Teams message, from the endpoint's checks to the answer posted back.

`receive` is the endpoint's whole work and stays fast: verify the token, parse the activity,
check it against the token, and hand the message to a worker (job TEAMS_TURN). Nothing is
saved before every check has passed. `answer` is the worker's: it finds the Eonyx user linked
to the sender, the session bound to the conversation (one per conversation and user, source
`teams`; the message `new` starts another), runs the turn while Teams shows "typing...", and
posts the answer in parts that fit Teams' size limit.

A message is answered once, though the channel or the queue may deliver it twice, and though
the worker answering it may die mid-turn (its job then comes back, see workers/app.py): the
answer runs under a lock kept alive while its worker lives, and the message is marked
`taken` when its answer starts and `answered` when the reply is posted. A delivery that finds
it answered does nothing; one that finds it taken (its first worker died) answers the user's
message the dead worker saved, with a retry, instead of saving it a second time.
"""

from __future__ import annotations

import logging

from shared.accounts.people import DISABLED_MESSAGE, Principal
from shared.chat import turns
from shared.core import observability, registry
from shared.core.errors import EonyxError, Forbidden, InvalidInput, NotFound, Unavailable
from shared.core.job_names import TEAMS_TURN
from shared.core.messages import content_text, is_final_answer
from shared.infra.lost_jobs import JOB_LOCK_TTL, JOB_LOCK_WAIT
from shared.integrations import bindings
from shared.integrations.needs import IntegrationsRuntime
from shared.integrations.teams import activities, auth, links
from shared.integrations.teams.activities import Inbound
from shared.integrations.teams.channel import TeamsChannel
from shared.llm.client import LLMError
from shared.sessions import service as session_service

log = logging.getLogger(__name__)
SOURCE = CHANNEL = "teams"
NEW_COMMANDS = ("new", "/new")
SEEN_TTL = 24 * 3600  # an activity delivered twice within a day is answered once
TAKEN, ANSWERED = b"taken", b"answered"  # a delivery's marks (see the module's docstring)
NEW_SESSION_REPLY = "Starting afresh: your next message begins a new session."
TEXT_ONLY_REPLY = "I can only read text messages."
DISABLED_REPLY = "Your Eonyx account is disabled: ask your Eonyx administrator."


def channel_of(rt: IntegrationsRuntime) -> TeamsChannel:
    if rt.teams is None:
        raise NotFound("the Teams endpoint is off (set TEAMS_APP_ID to turn it on)")
    return rt.teams


def receive(rt: IntegrationsRuntime, authorization: str | None, body: bytes) -> str | None:
    """Check an incoming activity and queue its turn: the job id, or None when the activity
    needs no answer. Unauthorized (401) or InvalidInput (400) leave no trace."""
    channel = channel_of(rt)
    token = channel.verifier.verify(authorization)
    activity = activities.parse(body)
    auth.check_activity(
        token,
        activity.service_url,
        activities.channel_of(activity),
        activities.tenant_of(activity),
        rt.settings,
    )
    inbound = activities.inbound_message(activity)
    if inbound is None:
        return None
    if rt.jobs is None:
        raise Unavailable("no job queue is configured: Teams messages cannot be answered")
    try:
        return rt.jobs.enqueue(TEAMS_TURN, inbound.to_dict())
    except Exception as exc:  # whatever the broker raises: the channel retries
        raise Unavailable(f"the message could not be queued ({exc})") from exc


def _delivery_key(inbound: Inbound) -> str:
    return registry.TEAMS_SEEN + bindings.digest(f"{inbound.conversation_id}|{inbound.activity_id}")


def _take(rt: IntegrationsRuntime, key: str) -> bytes | None:
    """Mark the activity taken: None for its first delivery, else the mark an earlier one
    left (TAKEN: that delivery's worker died before answering; ANSWERED: done)."""
    if rt.redis is None:
        return None
    if rt.redis.set(key, TAKEN, nx=True, ex=SEEN_TTL):
        return None
    earlier = rt.redis.get(key)
    return earlier if isinstance(earlier, bytes) else ANSWERED  # expired meanwhile: day-old


def _last_exchange(
    rt: IntegrationsRuntime, user_id: str, session_id: str
) -> tuple[str | None, str | None]:
    """The text of the session's last user message and of its final answer (None: none
    yet). After a worker died mid-turn, its user message may be saved unanswered, or
    answered with the reply never posted."""
    state, _ = rt.store.load(user_id, session_id)
    answer = None
    for record in reversed(state.messages):
        if record.get("role") == "user":
            return content_text(record.get("content")), answer
        if is_final_answer(record) and answer is None:
            answer = content_text(record.get("content"))
    return None, None


def principal_for(rt: IntegrationsRuntime, inbound: Inbound) -> Principal | None:
    """The Eonyx user the sender is linked to (provisioned first with TEAMS_AUTO_PROVISION);
    `Forbidden` when that account is disabled."""
    if not inbound.aad_object_id:
        return None
    try:
        aad = links.check_aad_id(inbound.aad_object_id)
    except InvalidInput:
        return None
    with rt.db.session() as db:
        user = links.linked_user(db, aad)
    if user is None and rt.settings.teams_auto_provision:
        with rt.locks.hold(registry.TEAMS_PROVISION_LOCK + aad), rt.db.session() as db:
            user = links.linked_user(db, aad) or links.provision(db, aad, inbound.user_name)
    if user is None:
        return None
    if user.disabled:
        raise Forbidden(DISABLED_MESSAGE, code="account_disabled")
    return Principal(user.id, user.username, user.is_admin, SOURCE, "")


def link_help(inbound: Inbound) -> str:
    if not inbound.aad_object_id:
        return "I can only talk with people signed in to Teams with a work or school account."
    return (
        "I don't know you yet. Ask your Eonyx administrator to link your Teams account:\n\n"
        f"`eonyx users link YOUR-USERNAME --teams-aad-id {inbound.aad_object_id}`"
    )


def answer(rt: IntegrationsRuntime, data: dict[str, object]) -> dict[str, object]:
    """The worker's half: run the message's turn and post the answer. Idempotent: a message
    delivered again is skipped, one whose first worker died is answered once."""
    inbound = Inbound.from_dict(dict(data))
    key = _delivery_key(inbound)
    # A duplicate waits for the delivery answering it, then finds it answered.
    with rt.locks.hold(
        registry.TEAMS_TURN_LOCK + key, wait=JOB_LOCK_WAIT, ttl=JOB_LOCK_TTL, keepalive=True
    ):
        earlier = _take(rt, key)
        if earlier == ANSWERED:
            return {"outcome": "duplicate"}
        result = _answer(rt, inbound, resumed=earlier == TAKEN)
        if rt.redis is not None:
            rt.redis.set(key, ANSWERED, ex=SEEN_TTL)
        return result


def _answer(rt: IntegrationsRuntime, inbound: Inbound, *, resumed: bool) -> dict[str, object]:
    connector = channel_of(rt).connector
    try:
        principal = principal_for(rt, inbound)
    except Forbidden:
        connector.reply(inbound, DISABLED_REPLY)
        return {"outcome": "disabled"}
    if principal is None:
        connector.reply(inbound, link_help(inbound))
        return {"outcome": "not_linked"}
    key = bindings.digest(inbound.conversation_id)
    if inbound.text.lower() in NEW_COMMANDS:
        bindings.unbind(rt, principal.user_id, CHANNEL, key)
        connector.reply(inbound, NEW_SESSION_REPLY)
        return {"outcome": "new_session"}
    if not inbound.text:
        connector.reply(inbound, TEXT_ONLY_REPLY)
        return {"outcome": "not_text"}
    with connector.typing_while(inbound):
        session_id, _ = bindings.bound_session(
            rt,
            principal,
            CHANNEL,
            key,
            lambda: session_service.create_session(rt, principal, rt.memory).id,
        )
        asked, answered = (
            _last_exchange(rt, principal.user_id, session_id) if resumed else (None, None)
        )
        if asked == inbound.text and answered is not None:  # saved, perhaps never posted
            text, outcome = answered, "answered"
        else:
            retry = asked == inbound.text  # saved by the dead worker, unanswered
            text, outcome = _run_turn(rt, principal, session_id, inbound.text, retry=retry)
    parts = activities.split_text(text or "(no answer)")
    for part in parts:
        connector.reply(inbound, part)
    return {"outcome": outcome, "session_id": session_id, "parts": len(parts)}


def _run_turn(
    rt: IntegrationsRuntime, principal: Principal, session_id: str, text: str, *, retry: bool
) -> tuple[str, str]:
    """(the reply, the outcome) of the message's turn; a failure is told, not raised."""
    try:
        result = turns.run_turn(rt, principal, session_id, turns.TurnRequest(text, retry=retry))
    except EonyxError as exc:  # the user's message is saved; say what went wrong
        log.warning("Teams turn in %s failed: %s", session_id, exc.message)
        said = exc.message
        if isinstance(exc, LLMError) and not principal.is_admin:  # see api/errors.py
            said = exc.public_message(observability.current_request_id())
        return f"Sorry, I could not answer that: {said}", "failed"
    return content_text(result.assistant_message.get("content")), "answered"
