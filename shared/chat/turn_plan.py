"""A turn's first stage: every check of the request before anything is written.

`plan_turn` checks what needs no session state (the text, images, project, storage quota,
token budget, offering and access) and returns the plan; under the session's lock,
`opening` checks what needs the state (the trash, the model's window, the client's tool
results, what a retry answers, what an edit replaces) and returns the records the turn
saves before it calls the model. A request refused by either leaves the session as it
was, and a new session (`NewSession`) is not made at all.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from shared.accounts import storage
from shared.accounts.people import Principal
from shared.chat.context import ProjectInput, check_fits
from shared.chat.needs import ChatRuntime
from shared.chat.project_context import (
    ContextFile,
    load_server_context,
    project_context_of,
    project_context_window,
    validate_project_context,
)
from shared.chat.prompt import choose_override
from shared.chat.turn_input import (
    ClientTurn,
    check_tool_results,
    edited_branch,
    message_to_answer,
)
from shared.core import text as text_rule
from shared.core.clock import utcnow
from shared.core.errors import InvalidInput
from shared.core.messages import MessageRecord, message_record, meta_record, supersede_record
from shared.files.session_store import SessionState, new_session_id
from shared.llm import access, models
from shared.llm.client import Offering
from shared.sessions import image_store, titles
from shared.sessions import service as session_service


@dataclass(frozen=True)
class TurnRequest:
    content: str | list[dict[str, Any]] | None = None  # text, or OpenAI-style content parts
    project_context: list[dict[str, Any]] | None = None
    cwd: str | None = None
    system_prompt: str | None = None
    context_window: int | None = None  # the project's bound on the window (eonyx.json)
    retry: bool = False
    regenerate: bool = False  # answer the last user message again; its answer is superseded
    edit: str | None = None  # a user message's id: it and all after it give way to `content`
    offering: str | None = None  # an offering id; None: the one bound to the chat role
    images: tuple[bytes, ...] = ()  # uploaded image files, beside any in the content parts
    client: ClientTurn = ClientTurn()


@dataclass(frozen=True)
class NewSession:
    """A session made by the turn's first message, once every check has passed. With
    `keep_unanswered` False (an OpenAI-style client, which sends its whole request again
    after a failure), it goes again when the turn ends without an answer."""

    title: str | None = None
    folder_id: str | None = None
    temporary: bool = False
    source: str | None = None
    keep_unanswered: bool = True


@dataclass(frozen=True)
class TurnPlan:
    """A request that passed the checks needing no session state."""

    session_id: str
    new: NewSession | None  # the session to make; None: it exists
    request: TurnRequest
    project: ProjectInput
    offering: Offering
    text: str | None  # the new message's text, and its checked images
    images: list[image_store.CheckedImage]


def plan_turn(
    rt: ChatRuntime, principal: Principal, target: str | NewSession, request: TurnRequest
) -> TurnPlan:
    """Every check of `request` that needs no session state (NotFound for a session that is
    not the caller's)."""
    if isinstance(target, str):
        session_service.check_exists(rt, principal.user_id, target)
    else:
        target = _checked_new(rt, principal, target, request)
    rt.usage.check(principal.user_id)  # 429 budget_exceeded
    clash = request.client.tool_names & rt.tools.names
    if clash:
        raise InvalidInput(
            f"the tools {', '.join(sorted(clash))} are Eonyx's own: rename yours",
            code="tool_name_taken",
            param="tools",
        )
    message_text, images = _message(rt, request)
    project = resolve_project(rt, request)
    # The message and its images; the answer is not known yet (it may pass the quota a little).
    adding = len((message_text or "").encode()) + sum(len(image.data) for image in images)
    storage.check(rt, principal.user_id, adding)
    offering = _offering(rt, principal, request.offering)
    if isinstance(target, str):
        return TurnPlan(target, None, request, project, offering, message_text, images)
    return TurnPlan(new_session_id(), target, request, project, offering, message_text, images)


def _checked_new(
    rt: ChatRuntime, principal: Principal, new: NewSession, request: TurnRequest
) -> NewSession:
    if request.retry or request.regenerate or request.edit:
        raise InvalidInput("a new session has no message to answer again", param="retry")
    title = session_service.check_new_session(
        rt, principal, title=new.title, folder_id=new.folder_id
    )
    return dataclasses.replace(new, title=title)


def _message(
    rt: ChatRuntime, request: TurnRequest
) -> tuple[str | None, list[image_store.CheckedImage]]:
    """The new message's text and checked images; None for the text when the client's
    messages (its tool results) are the turn, or the turn answers a saved message again."""
    fetch = (
        image_store.url_fetcher(rt.settings.max_image_bytes)
        if rt.settings.fetch_image_urls
        else None
    )
    message_text, inline = image_store.split_content(request.content, fetch)
    checked = image_store.check_all(rt, [*inline, *request.images])
    answers_again = request.retry or request.regenerate
    if request.regenerate and (request.edit or (message_text or "").strip() or checked):
        raise InvalidInput(
            "a regenerate answers the last message again: send no content and no edit",
            code="regenerate_with_content",
            param="regenerate",
        )
    if request.edit and request.retry:
        raise InvalidInput("an edit is a new message: it cannot be a retry", param="edit")
    if not answers_again and not (message_text or "").strip() and not checked:
        if not request.client.messages:
            raise InvalidInput("content must not be empty", code="empty_message")
        message_text = None
    for name, value in (("content", message_text), ("system_prompt", request.system_prompt)):
        if value is not None:
            text_rule.check(value, name)
    return message_text, checked


def _offering(rt: ChatRuntime, principal: Principal, name: str | None) -> Offering:
    if not name:
        return models.offering_for(rt, "chat")
    offering = models.offering_named(rt, name)
    access.check(rt, principal, name)  # 403 offering_not_allowed
    return offering


def resolve_project(rt: ChatRuntime, request: TurnRequest) -> ProjectInput:
    """Request `system_prompt` beats eonyx.json's, which beats generation; an override
    attaches no AGENTS.md. `cwd` is walked on the server, `project_context` comes walked."""
    if request.cwd is not None and request.project_context is not None:
        raise InvalidInput("give either cwd or project_context, not both")
    files: list[ContextFile] = []
    config_prompt, window = None, request.context_window
    if request.cwd is not None:
        project = load_server_context(rt.settings.projects_dir, request.cwd)
        files, config_prompt = project.files, project.system_prompt
        window = window or project_context_window(project.config)
    elif request.project_context is not None:
        files = validate_project_context(request.project_context)
    override = choose_override(request.system_prompt, config_prompt)
    instructions = request.client.instructions
    if override:
        return ProjectInput((), override, instructions, window)
    return ProjectInput(tuple(files), client_instructions=instructions, context_window=window)


def blank_state(principal: Principal, plan: TurnPlan) -> SessionState:
    """The state of the session `plan.new` makes, before it is made: what `opening` checks."""
    assert plan.new is not None
    moment = utcnow()
    return SessionState(
        id=plan.session_id,
        user_id=principal.user_id,
        source=plan.new.source or principal.source,
        created_at=moment,
        updated_at=moment,
        temporary=plan.new.temporary,
        title=plan.new.title,
    )


@dataclass(frozen=True)
class Opening:
    """What a turn saves before it calls the model, and the user message it answers."""

    records: list[Mapping[str, Any]]
    user_message: Mapping[str, Any]


def opening(rt: ChatRuntime, state: SessionState, plan: TurnPlan) -> Opening:
    """The checks that need the session's state, under its lock; nothing is written yet
    but the message's images, which its record names."""
    session_service.refuse_in_trash(state)
    request, client = plan.request, plan.request.client
    user_message: Mapping[str, Any]
    if request.retry or request.regenerate:
        user_message, superseded = message_to_answer(state, regenerate=request.regenerate)
        check_fits(rt, state, plan.project, plan.offering, user_message.get("content"))
        records: list[Mapping[str, Any]] = [supersede_record(superseded)] if superseded else []
    else:
        branch = edited_branch(state, request.edit) if request.edit else []
        edit = [supersede_record(branch)] if branch else []
        if edit:  # the state the new message follows: the edited branch is gone from it
            state = state.copy()
            state.apply(edit[0])
        check_fits(rt, state, plan.project, plan.offering, plan.text)
        records = list[Mapping[str, Any]](client.messages)
        speaks = plan.text is not None or bool(plan.images)
        check_tool_results(state, [*records, *([{"role": "user"}] if speaks else [])])
        if speaks:  # the images go to disk before the message that names them
            names = [
                *_kept_images(branch),
                *image_store.save(rt.store, state.user_id, state.id, plan.images),
            ]
            records.append(message_record("user", plan.text or "", images=names or None))
        user_message = records[-1]
        records = [*edit, *records]  # one write: the supersede, then the new message
    meta = _meta_changes(rt, state, plan.project, plan.text)
    if meta:
        records.append(meta_record(meta))
    return Opening(records, user_message)


def _kept_images(branch: list[MessageRecord]) -> list[str]:
    """The images of the user message an edit replaces (the branch's first): the edited
    message keeps them, its new text in place of the old, as a person editing a caption
    expects; their files are the session's already, so nothing is copied or counted again."""
    return list(branch[0].get("images") or ()) if branch else []


def _meta_changes(
    rt: ChatRuntime, state: SessionState, project: ProjectInput, content: str | None
) -> dict[str, Any]:
    """Metadata to record with the user's message: a first title, a changed project context."""
    changes = titles.first_message_changes(rt, state, content)
    record = project.to_record()
    if record != (project_context_of(state) or ProjectInput().to_record()):
        changes["project_context"] = record
    return changes
