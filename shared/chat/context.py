"""What the model is sent: the system prompt, then the session's messages after the summary's
boundary.

The prompt is built in the order the design gives (identity, user profile, agent memory,
project context, summary), from the memory snapshot the session took when it started. When
the history nears the model's window, old turns are compacted into a running summary first
(the summarization role's model call; a summary a worker precomputed is reused). The
messages come from the session's state as encoded when it was read, so a long history costs a
copy of bytes.
Used by a turn, by GET /sessions/<id>/context and by the worker's summary precomputation
(`precompute_summary`, here).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

import orjson

from shared.chat.compaction import (
    CompactionPlan,
    ImageParts,
    SummaryState,
    Usage,
    context_usage,
    current_summary,
    estimate_tokens,
    plan_compaction,
    sized_usage,
    summary_request,
    summary_start,
    to_model_messages,
)
from shared.chat.needs import ChatRuntime
from shared.chat.project_context import ContextFile, project_context_of
from shared.chat.prompt import build_system_prompt
from shared.core.errors import TooLarge
from shared.core.job_names import PRECOMPUTE_SUMMARY
from shared.core.messages import is_model_message
from shared.files.session_store import SessionState
from shared.llm import models
from shared.llm.client import LLMError, LLMInvalidResponse, Offering
from shared.memory.files import snapshot_of
from shared.sessions import image_store
from shared.sessions import service as session_service
from shared.sessions.turn_hooks import EndedTurn
from shared.sessions.turn_lock import hold_turn_lock

if TYPE_CHECKING:  # the runtime is passed in, never imported: it sits above this package
    from shared.accounts.people import Principal

log = logging.getLogger(__name__)


class ProjectRecord(TypedDict):
    """A `ProjectInput` as a session's metadata keeps it (`project_context`)."""

    files: list[dict[str, str]]  # {path, content}
    override: str | None
    client_instructions: NotRequired[str]
    context_window: NotRequired[int]


@dataclass(frozen=True)
class ProjectInput:
    """The caller's part of the prompt: AGENTS.md files, or an override that replaces them,
    and the instructions an OpenAI-style client sent as its system messages (the facade)."""

    files: tuple[ContextFile, ...] = ()
    override: str | None = None
    client_instructions: str | None = None
    context_window: int | None = None  # eonyx.json's bound on the window, in tokens

    def to_record(self) -> ProjectRecord:
        record: ProjectRecord = {
            "files": [f.to_dict() for f in self.files],
            "override": self.override,
        }
        if self.client_instructions is not None:  # older records have neither
            record["client_instructions"] = self.client_instructions
        if self.context_window is not None:
            record["context_window"] = self.context_window
        return record

    @classmethod
    def from_record(cls, data: Any) -> ProjectInput:
        if not isinstance(data, dict):
            return cls()
        files = tuple(ContextFile(f["path"], f["content"]) for f in data.get("files") or ())
        return cls(
            files,
            data.get("override"),
            data.get("client_instructions"),
            data.get("context_window"),
        )

    def window(self, offering: Offering | None) -> int | None:
        """The window a turn is held to: the smaller of the offering's and the project's."""
        windows = [w for w in (offering and offering.context_window, self.context_window) if w]
        return min(windows) if windows else None


@dataclass
class AssembledContext:
    """What the model is sent: the system prompt, then the session's message records from
    `start` on (those after the summary's boundary)."""

    system_prompt: str
    state: SessionState
    start: int
    summary: SummaryState | None
    usage: Usage
    image_parts: ImageParts  # a user message's images as content parts, read from the files

    @property
    def message_count(self) -> int:
        return sum(1 for record in self.state.messages[self.start :] if is_model_message(record))

    def request_messages(self) -> list[Mapping[str, Any] | orjson.Fragment]:
        """The messages for the request body: each record's form encoded when it was read,
        so a long history costs a copy of bytes, not a walk through its dicts."""
        state = self.state
        messages: list[Mapping[str, Any] | orjson.Fragment] = []
        for record, form in zip(
            state.messages[self.start :], state.forms[self.start :], strict=True
        ):
            if form is not None:
                messages.append(orjson.Fragment(form))
            elif is_model_message(record):
                messages.extend(to_model_messages([record], image_parts=self.image_parts))
        return messages

    def usage_now(self) -> Usage:
        """The estimate with what was saved since it was assembled (this turn's records)."""
        return sized_usage(self.system_prompt, self.state.sizes[self.start :], self.usage.window)


def session_prompt(
    rt: ChatRuntime, state: SessionState, project: ProjectInput, summary: str | None
) -> str:
    """The session's system prompt: the identity as IDENTITY.md holds it now, then the memory
    snapshot the session took when it started (none for a temporary chat, and none for a part
    that is switched off), the project part and the summary."""
    snapshot = {} if state.temporary else (snapshot_of(state) or {})
    switches = rt.live_settings.settings()
    return build_system_prompt(
        identity=rt.identity,
        user_profile=snapshot.get("user_profile") if switches.user_profile_enabled else None,
        agent_memory=snapshot.get("agent_memory") if switches.agent_memory_enabled else None,
        project_files=project.files,
        summary=summary,
        override=project.override,
        client_instructions=project.client_instructions,
    )


def assemble_context(
    rt: ChatRuntime,
    state: SessionState,
    project: ProjectInput,
    offering: Offering | None,
    *,
    summarize: bool,
) -> AssembledContext:
    """Build the prompt; when the history nears the window and `summarize` is set, compact it
    first (reusing a summary a worker precomputed when there is one)."""
    window = project.window(offering)
    records = state.messages

    def prompt_with(summary: SummaryState | None) -> str:
        return session_prompt(rt, state, project, summary.summary if summary else None)

    summary = current_summary(records, rt.store.read_summary(state.user_id, state.id))
    prompt = prompt_with(summary)
    if summarize and offering is not None:
        plan = plan_compaction(
            records,
            system_prompt=prompt,
            window=window,
            previous_summary=summary.summary if summary else None,
            summarized_upto=summary.covered_through if summary else None,
            sizes=state.sizes,
        )
        if plan is not None:
            try:
                summary = summarize_plan(rt, state, plan)
            except LLMError as exc:
                if (plan.usage.percent or 0) >= 100:
                    raise  # the history no longer fits: the turn cannot go on without it
                log.warning("summarizing %s failed (%s); sent without compacting", state.id, exc)
            prompt = prompt_with(summary)

    def image_parts(record: Mapping[str, Any]) -> list[dict[str, Any]]:
        return image_store.model_parts(rt.store, state.user_id, state.id, record["images"])

    start = summary_start(records, summary)
    usage = sized_usage(prompt, state.sizes[start:], window)
    return AssembledContext(prompt, state, start, summary, usage, image_parts)


def summarize_plan(rt: ChatRuntime, state: SessionState, plan: CompactionPlan) -> SummaryState:
    """Ask the summarization role for the running summary and keep it beside the session."""
    offering = models.offering_for(rt, "summarization")
    completion = rt.llm.complete(offering, summary_request(plan), user_id=state.user_id)
    summary_text = (completion.content or "").strip()
    if not summary_text:
        raise LLMInvalidResponse(offering.id, "returned an empty summary")
    summary = SummaryState.from_plan(plan, summary_text)
    rt.store.write_summary(state.user_id, state.id, summary.to_dict())
    return summary


def after_turn(rt: ChatRuntime, ended: EndedTurn) -> None:
    """An answer that took the history near the window: a worker prepares the summary the
    next turn needs, so that turn does not wait for it."""
    if ended.answered and ended.context_over_threshold:
        rt.hint(PRECOMPUTE_SUMMARY, ended.user_id, ended.state.id)


def precompute_summary(rt: ChatRuntime, user_id: str, session_id: str) -> bool:
    """The worker's half of compaction: summarize now so the next turn need not wait.
    Idempotent: with nothing to compact (or already done) it does nothing, and nothing for
    a user past their token budget (their next turn is refused anyway)."""
    if not rt.usage.allows(user_id):
        log.info("summary of %s not precomputed: the user's token budget is used up", session_id)
        return False
    try:
        offering = models.offering_for(rt, "chat")
        # The turn lock: a turn that arrives meanwhile waits for this summary, not redoing it.
        with hold_turn_lock(rt, session_id):
            state, _ = rt.store.load(user_id, session_id)
            project = ProjectInput.from_record(project_context_of(state))
            before = rt.store.read_summary(user_id, session_id)
            assemble_context(rt, state, project, offering, summarize=True)
            return rt.store.read_summary(user_id, session_id) != before
    except (LLMError, models.NoModel) as exc:  # an outage: one line; the next turn retries
        log.warning("summary of %s not precomputed: %s", session_id, exc.message)
        return False


def check_fits(
    rt: ChatRuntime, state: SessionState, project: ProjectInput, offering: Offering, content: Any
) -> None:
    """Refuse (413, before it is saved or sent) a message that cannot fit the model's window
    even with no history at all: compaction shrinks the history, never the message or the
    system prompt."""
    window = project.window(offering)
    if not window or not content:
        return
    prompt = session_prompt(rt, state, project, None)
    usage = context_usage(prompt, [{"role": "user", "content": content}], window)
    if usage.tokens <= window:
        return
    whose = "" if window == offering.context_window else ", as the project's eonyx.json sets it"
    raise TooLarge(
        f"the message is about {estimate_tokens(content):,} tokens; with the system prompt "
        f"that is {usage.tokens:,} tokens, {usage.tokens - window:,} more than the model's "
        f"context window of {window:,} tokens (offering {offering.id!r}{whose}); shorten it, "
        "nothing was saved",
        code="message_too_long",
    )


def describe_context(rt: ChatRuntime, principal: Principal, session_id: str) -> AssembledContext:
    """What the model would be sent on the next turn (no compaction is run for a look)."""
    session_service.get_session(rt, principal, session_id)
    state, _ = rt.store.load(principal.user_id, session_id)
    project = ProjectInput.from_record(project_context_of(state))
    try:
        offering: Offering | None = models.offering_for(rt, "chat")
    except models.NoModel:
        offering = None
    return assemble_context(rt, state, project, offering, summarize=False)
