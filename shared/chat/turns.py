"""One chat turn, from the user's words to the model's final answer, in three stages.

1. plan (turn_plan.py): every check of the request, before anything is written; a refused
   message leaves the session as it was, and a session made by its first message
   (`NewSession`) is made only once the message is accepted.
2. rounds (turn_rounds.py): the user's message is on disk (fsynced) before the model is
   called; then model rounds, each tool call and result saved as it happens, until the
   answer. A failure of the model leaves the session consistent: what was saved stays saved
   and the turn can be retried (`retry=True`).
3. end: a history that the answer took past the model's window is compacted at once (the
   figure the turn reports is the one GET /context gives); then the after-turn hooks the
   composition root registered (shared/sessions/turn_hooks.py), also after a failure.

Turns on one session are serialised by a lock; turns on different sessions run side by
side. A process that dies mid-turn frees its session within the lock's 30 s
(shared/sessions/turn_lock.py).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass

from shared.accounts.people import Principal
from shared.chat.compaction import Usage
from shared.chat.context import describe_context, precompute_summary
from shared.chat.needs import ChatRuntime
from shared.chat.turn_plan import (
    NewSession,
    TurnPlan,
    TurnRequest,
    blank_state,
    opening,
    plan_turn,
)
from shared.chat.turn_rounds import StepEvent, TextDelta, Turn, TurnResult, rounds
from shared.core import observability
from shared.core.errors import (
    Conflict,
    EonyxError,
    Forbidden,
    InvalidInput,
    NotFound,
    TooLarge,
    TooManyRequests,
    Unauthorized,
)
from shared.core.events import SessionUpdated
from shared.infra import event_bus
from shared.llm.client import LLMError
from shared.sessions import service as session_service
from shared.sessions import titles
from shared.sessions.turn_hooks import EndedTurn
from shared.sessions.turn_lock import hold_turn_lock

__all__ = [
    "NewSession",
    "SessionMade",
    "StartedTurn",
    "StepEvent",
    "TextDelta",
    "TurnRequest",
    "TurnEvent",
    "TurnResult",
    "iter_turn",
    "run_turn",
    "start_streamed",
]
log = logging.getLogger(__name__)
REJECTIONS = (InvalidInput, NotFound, Conflict, TooLarge, Forbidden, Unauthorized, TooManyRequests)
TurnEvent = TextDelta | StepEvent | TurnResult


@dataclass(frozen=True)
class SessionMade:
    """The first event of a turn that made its session: the message was accepted."""

    session_id: str


def iter_turn(
    rt: ChatRuntime,
    principal: Principal,
    target: str | NewSession,
    request: TurnRequest,
    *,
    stream: bool = False,
) -> Generator[SessionMade | TurnEvent, None, None]:
    """Run a turn on the session `target` names, or on one it makes: yields `SessionMade`
    first when it made one, then text as it streams, each tool step, and the `TurnResult`.

    Every turn ends with one log line and one observation of its latency and outcome: `ok`,
    `model_error` (the model failed; the message stays saved), `rejected` (a 4xx: nothing
    was asked of the model), `stopped` (the client left a streamed answer) or `error`."""
    started = time.perf_counter()
    outcome, session_id = "stopped", target if isinstance(target, str) else None
    steps = _turn_steps(rt, principal, target, request, stream)
    try:
        for item in steps:
            if isinstance(item, SessionMade):
                session_id = item.session_id
            elif isinstance(item, TurnResult):
                outcome = "ok"
            yield item
    except LLMError:
        outcome = "model_error"
        raise
    except REJECTIONS:
        outcome = "rejected"
        raise
    except (EonyxError, Exception):
        outcome = "error"
        raise
    finally:
        steps.close()  # a stopped stream releases the session's lock and the model's answer
        _finished(rt, principal, session_id, outcome, time.perf_counter() - started)


def _finished(
    rt: ChatRuntime, principal: Principal, session_id: str | None, outcome: str, seconds: float
) -> None:
    if outcome == "stopped" and session_id:  # indexed only now, after the client looked
        event = SessionUpdated(session_id)
        event_bus.publish(rt.redis, principal.user_id, event)
    observability.turn_finished(outcome, seconds)
    log.info(
        "turn %s",
        outcome,
        extra={"session_id": session_id, "outcome": outcome, "ms": round(seconds * 1000, 1)},
    )


def _turn_steps(
    rt: ChatRuntime,
    principal: Principal,
    target: str | NewSession,
    request: TurnRequest,
    stream: bool,
) -> Generator[SessionMade | TurnEvent, None, None]:
    """The stages (see the module). Records go to the file as they happen; the index row is
    brought up to date once, when the writer closes, whether the turn succeeded or not."""
    plan = plan_turn(rt, principal, target, request)
    ended: EndedTurn | None = None
    try:
        with hold_turn_lock(rt, plan.session_id):
            turn = yield from _begin(rt, principal, plan, stream)
            with turn.writer:
                answered_before = titles.answered(turn.state)
                ended = EndedTurn(principal.user_id, turn.state, False, answered_before)
                try:
                    result = yield from rounds(turn)
                except BaseException as exc:  # a failed model, a stopped stream...
                    _unmake_unanswered(rt, principal, plan, exc)
                    raise
        result.context = _compacted_if_full(rt, principal, result)
        ended = EndedTurn(
            principal.user_id,
            turn.state,
            True,
            ended.answered_before,
            context_over_threshold=result.context.over_threshold,
        )
    finally:
        if ended is not None:
            rt.turn_hooks.run(ended)
    yield result


def _begin(
    rt: ChatRuntime, principal: Principal, plan: TurnPlan, stream: bool
) -> Generator[SessionMade, None, Turn]:
    """Under the lock: the checks that need the session's state, then its opening records
    saved (the session made with them, for a `NewSession`)."""
    if plan.new is None:
        state, loaded = rt.store.load(principal.user_id, plan.session_id)
        first = opening(rt, state, plan)
        writer = session_service.SessionWriter(
            rt, principal.user_id, plan.session_id, size_before=loaded.size
        )
        turn = Turn(rt, principal, plan, state, writer, stream, first.user_message)
        if first.records:
            turn.save(first.records)  # on disk before the model is called
        return turn
    first = opening(rt, blank_state(principal, plan), plan)
    new = plan.new
    state, made, _ = session_service.make_session(
        rt,
        principal,
        rt.memory,
        title=new.title,
        folder_id=new.folder_id,
        temporary=new.temporary,
        source=new.source,
        session_id=plan.session_id,
        records=first.records,
    )
    writer = session_service.SessionWriter(
        rt, principal.user_id, plan.session_id, size_before=made.size
    )
    yield SessionMade(plan.session_id)
    return Turn(rt, principal, plan, state, writer, stream, first.user_message)


def _unmake_unanswered(
    rt: ChatRuntime, principal: Principal, plan: TurnPlan, exc: BaseException
) -> None:
    """A session this turn made, for a client that sends its whole request again after a
    failure, goes again if it holds no answer; otherwise the error names it."""
    if plan.new is None:
        return
    if not plan.new.keep_unanswered:
        session_service.discard_unanswered(rt, principal.user_id, plan.session_id)
    elif isinstance(exc, EonyxError):
        exc.details = {**(exc.details or {}), "session_id": plan.session_id}


def _compacted_if_full(rt: ChatRuntime, principal: Principal, result: TurnResult) -> Usage:
    """The answer took the history past the model's window: it is compacted before the turn
    ends (not left to a worker), so the gauge every client shows never passes 100 %. A
    failed summary keeps the figure; the next turn compacts before it asks."""
    usage = result.context
    if (usage.percent or 0) < 100:
        return usage
    if not precompute_summary(rt, principal.user_id, result.session_id):
        return usage
    return describe_context(rt, principal, result.session_id).usage


@dataclass(frozen=True)
class StartedTurn:
    """A streamed turn run up to its first answer event: its session and its events."""

    session_id: str
    events: Iterator[TurnEvent]


def start_streamed(
    rt: ChatRuntime, principal: Principal, target: str | NewSession, request: TurnRequest
) -> StartedTurn:
    """Run a streamed turn up to its first text or step (the model has begun to answer), so
    that what fails before, a refusal or the model's failure, is raised here: a plain error
    for the caller to answer, rather than an event in a stream already begun."""
    events = iter_turn(rt, principal, target, request, stream=True)
    first = next(events)
    session_id = target
    if isinstance(first, SessionMade):
        session_id, first = first.session_id, next(events)
    assert isinstance(session_id, str)
    assert not isinstance(first, SessionMade)
    return StartedTurn(session_id, _chained(first, events))


def _chained(
    first: TurnEvent, rest: Generator[SessionMade | TurnEvent, None, None]
) -> Iterator[TurnEvent]:
    """`first`, then the rest; closing this (the client left) closes the turn at once."""
    try:
        yield first
        for item in rest:
            assert not isinstance(item, SessionMade)
            yield item
    finally:
        rest.close()


def run_turn(
    rt: ChatRuntime, principal: Principal, target: str | NewSession, request: TurnRequest
) -> TurnResult:
    """A whole turn without streaming."""
    result = None
    for item in iter_turn(rt, principal, target, request):
        if isinstance(item, TurnResult):
            result = item
    assert result is not None
    return result
