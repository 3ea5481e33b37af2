"""The conversation of `eonyx chat`: the open session's transcript and its turns.

It owns what happens between the prompt and the server for one session: opening it (the
transcript's tail, an unanswered message offered for Ctrl+R), a message sent as a streamed
turn (tokens into a Markdown answer as they come, tool steps folding under their call, memory
writes as one line), a stopped or failed turn (the message stays saved; Ctrl+R answers it
again), a refused one (nothing saved: the text is offered back to the prompt), a regenerate
(the last answer gives way to the new one once the server accepts), and likes.

A new session does not exist on the server until its first message is accepted
(`POST /sessions/turns`): `session` stays None until the stream's first event names it.
What the app shows around it follows its reactive variables, which the app watches:
`session` (the header), `percent` (the context gauge) and `reached` (whether the server
answered). It reads nothing of the app: the prompt is offered a refused text through the
`give_back` function it was made with.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from textual import on, work
from textual.containers import VerticalScroll
from textual.message import Message
from textual.reactive import var
from textual.widget import Widget
from textual.widgets import Markdown
from textual.widgets.markdown import MarkdownStream
from textual.worker import Worker, WorkerCancelled, WorkerFailed

from cli.api_client import AsyncApiClient
from cli.api_error import ApiError
from cli.chat.widgets import AnswerEntry, Entry, Notice, StepEntry, UserEntry, WorkerGroups
from cli.stream import STEPS, Event, Step, memory_line
from shared.core.events import Done, SessionStarted, Token, ToolCall, ToolResult, TurnError
from shared.core.messages import content_text

SHOWN_MESSAGES = 120  # the tail of a long transcript that is drawn on opening
Session = dict[str, Any]


def message_kept(exc: ApiError, *, streamed: bool) -> bool:
    """Whether the server kept the message of a failed turn: it did once the stream began,
    after a model failure (502), and maybe when the connection broke after sending. A refusal
    (4xx) or a server that could not be reached kept nothing."""
    return streamed or exc.status == 502 or exc.code == "stream_broken"


async def stopped(stream: MarkdownStream | None) -> None:
    """The Markdown stream flushed and ended, if one is open."""
    if stream is not None:
        await stream.stop()


class Conversation(WorkerGroups, VerticalScroll):
    """The open session (`session`, None for a new one) and its entries."""

    session: var[Session | None] = var(None, always_update=True, init=False)
    percent: var[float | None] = var(None, always_update=True, init=False)
    reached: var[bool] = var(True, always_update=True, init=False)

    class OpenFailed(Message):
        """A session could not be opened; `at_start`: the app has nothing to show."""

        def __init__(self, error: ApiError, *, at_start: bool) -> None:
            super().__init__()
            self.error, self.at_start = error, at_start

    def __init__(self, api: AsyncApiClient, give_back: Callable[[str], bool], **kw: Any) -> None:
        super().__init__(**kw)
        self.api, self.give_back = api, give_back
        self.turn: Worker[None] | None = None
        self.can_retry = False
        self.steps: dict[str, StepEntry] = {}

    @property
    def open_id(self) -> str:
        """The open session's id, for what needs one (commands, likes)."""
        assert self.session is not None
        return str(self.session["id"])

    @property
    def streaming(self) -> bool:
        return self.turn is not None and self.turn.is_running

    # -- opening --

    @work(exclusive=True, group="open")
    async def load(self, fetch: Callable[[], Awaitable[Session | None]], at_start: bool) -> None:
        """Open what `fetch` finds (None: a new session); a message typed meanwhile waits."""
        try:
            await self.open(await fetch())
        except ApiError as exc:
            self.post_message(self.OpenFailed(exc, at_start=at_start))

    async def open(self, session: Session | None) -> None:
        """Show `session` (None: a new one, made by its first message)."""
        self.session, self.can_retry = session, False
        self.steps.clear()
        await self.remove_children()
        self.percent = None
        if session is None:
            return
        found: tuple[Any, Any] = await asyncio.gather(
            self.api.messages(session["id"]),
            self.api.context(session["id"]),
            return_exceptions=True,
        )
        messages, context = found
        if isinstance(messages, BaseException):
            raise messages
        await self.show_transcript(messages)
        # A note a coding agent left over MCP (named "mcp") waits for no answer.
        if messages and messages[-1].get("role") == "user" and messages[-1].get("name") != "mcp":
            self.can_retry = True
            await self.say("your last message has no answer yet: Ctrl+R answers it now")
        if isinstance(context, dict):  # the gauge is a hint: without it the session still opens
            self.percent = context.get("percent")

    async def show_transcript(self, messages: list[dict[str, Any]]) -> None:
        hidden = len(messages) - SHOWN_MESSAGES
        entries: list[Any] = []
        if hidden > 0:
            entries.append(Notice(f"{hidden} earlier messages are not shown (/export has all)"))
            messages = messages[hidden:]
        for message in messages:
            entries += self._entries_of(message)
        await self.mount_all(entries)
        for entry in entries:
            if isinstance(entry, Entry) and entry.like_status:
                entry.show_like(entry.like_status)
        self.scroll_end(animate=False)

    def _entries_of(self, message: dict[str, Any]) -> list[Any]:
        """What one stored message adds (a tool's result goes into its call's step)."""
        role, text = message.get("role"), content_text(message.get("content"))
        if role == "user":
            return [_liked(UserEntry(text, message.get("id")), message)]
        if role == "assistant" and message.get("tool_calls"):
            entries: list[Any] = [AnswerEntry(text)] if text.strip() else []
            for call in message["tool_calls"]:
                step = StepEntry(call)
                self.steps[step.call_id] = step
                entries.append(step)
            return entries
        if role == "tool" and message.get("tool_call_id") in self.steps:
            self.steps[message["tool_call_id"]].set_result(text)
        elif role == "assistant":
            return [_liked(AnswerEntry(text, message.get("id")), message)]
        return []

    # -- turns --

    def send(self, body: dict[str, Any]) -> None:
        self.turn = self.run_turn(body)

    @work(group="turn")
    async def run_turn(self, body: dict[str, Any]) -> None:
        """One streamed turn; a fresh message is shown at once, a retry re-uses the shown one.
        A message typed while the session is still opening waits for it: opening clears the
        conversation (seen under tmux: the message vanished from the screen, answered)."""
        for opening in self.workers_in("open"):
            with contextlib.suppress(WorkerCancelled, WorkerFailed):  # it says so itself
                await opening.wait()
        user: UserEntry | None = None
        if not (body.get("retry") or body.get("regenerate")):
            user = UserEntry(body["content"])
            await self.mount(user)
            self.scroll_end(animate=False)
        self.can_retry = False
        self.anchor()  # stay at the end as the answer grows, until the user scrolls up
        reader = TurnReader(self, user, self.last_answer() if body.get("regenerate") else [])
        try:
            session_id = None if self.session is None else self.open_id
            async for event in self.api.stream_turn(session_id, body):
                await reader.read(event)
        except ApiError as exc:
            if message_kept(exc, streamed=reader.streamed):
                await self.turn_failed(exc)
            else:
                await self.turn_refused(exc, body.get("content"), user)
        except asyncio.CancelledError:
            await self.mount(
                Notice("stopped: your message is saved; Ctrl+R asks for the answer again", "info")
            )
            self.can_retry = self.session is not None
            raise
        finally:
            await reader.close()
            self.scroll_end(animate=False)

    def last_answer(self) -> list[Widget]:
        """What the screen shows after the last user message: the answer a regenerate
        replaces, with its steps and notices."""
        shown = list(self.children)
        users = [n for n, widget in enumerate(shown) if isinstance(widget, UserEntry)]
        return shown[users[-1] + 1 :] if users else []

    async def finish_turn(
        self, turn: dict[str, Any], user: UserEntry | None, answer: AnswerEntry | None
    ) -> None:
        final = turn.get("assistant_message") or {}
        if user is not None:
            user.message_id = (turn.get("user_message") or {}).get("id")
        if answer is None:
            answer = AnswerEntry(content_text(final.get("content")))
            await self.mount(answer)
        answer.message_id = final.get("id")
        self.percent = (turn.get("context") or {}).get("percent")
        if self.session is not None:
            with contextlib.suppress(ApiError):  # the header keeps what it had
                self.session = await self.api.session(self.open_id)

    async def turn_failed(self, exc: ApiError) -> None:
        """The message is saved and unanswered: Ctrl+R asks for the answer (a first message
        is saved in the session made for it: it opens)."""
        if self.session is None and exc.session_id:
            with contextlib.suppress(ApiError):
                self.session = await self.api.session(exc.session_id)
        self.can_retry = self.session is not None
        hint = "; Ctrl+R answers your message again" if self.can_retry else ""
        await self.mount(Notice(f"{exc}{hint}", "error"))

    async def turn_refused(self, exc: ApiError, content: Any, user: UserEntry | None) -> None:
        """Nothing was saved: the message leaves the conversation and goes back into the
        prompt (a first message made no session: the server makes it on acceptance)."""
        if exc.status == 0:
            self.reached = False
        if user is not None:
            await user.remove()
        back = isinstance(content, str) and self.give_back(content)
        where = "; your message is back in the box" if back else ""
        await self.mount(Notice(f"{exc}{where}", "error"))

    async def show_step(self, step: Step) -> None:
        if isinstance(step, ToolCall):
            entry = StepEntry(step.as_json())
            self.steps[entry.call_id] = entry
            await self.mount(entry)
        elif isinstance(step, ToolResult):
            step_of = self.steps.get(str(step.message.get("tool_call_id")))
            if step_of is not None:
                step_of.set_result(content_text(step.message.get("content")))
        else:
            await self.mount(Notice(f"memory: {memory_line(step.event)}", "memory"))

    def stop(self) -> None:
        if self.turn is not None and self.turn.is_running:
            self.turn.cancel()

    async def say(self, text: str, kind: str = "info") -> None:
        await self.mount(Notice(text, kind))
        self.scroll_end(animate=False)

    async def show_answer(self, markdown: str) -> None:
        """Text of this client's own (the /help), shown as an answer is."""
        await self.mount(AnswerEntry(markdown))
        self.scroll_end(animate=False)

    # -- selecting and liking messages --

    def select(self, step: int) -> None:
        entries = [e for e in self.query(Entry) if e.message_id]
        if not entries:
            return
        focused = self.screen.focused
        index = entries.index(focused) + step if focused in entries else len(entries) - 1
        entry = entries[max(0, min(index, len(entries) - 1))]
        entry.focus()
        entry.scroll_visible(animate=False)

    @on(Entry.LikeRequested)
    @work(group="like")
    async def _like(self, event: Entry.LikeRequested) -> None:
        entry = event.entry
        if self.session is None or entry.message_id is None:
            return
        try:
            if entry.like_status in ("saving", "saved"):
                await self.api.unlike(self.open_id, entry.message_id)
                self.show_like([entry.message_id], None, None)
            else:
                like = await self.api.like(self.open_id, entry.message_id)
                ids = like.get("message_ids") or [entry.message_id]
                self.show_like(ids, like.get("status"), like.get("detail"))
        except ApiError as exc:
            self.notify(str(exc), severity="error")

    def show_like(self, message_ids: list[str], status: str | None, detail: str | None) -> None:
        for entry in self.query(Entry):
            if entry.message_id in message_ids:
                entry.show_like(status, detail)

    async def refresh_likes(self) -> None:
        """Without the events socket: the status of likes still saving, asked again."""
        if self.session is None or not any(e.like_status == "saving" for e in self.query(Entry)):
            return
        for message in await self.api.messages(self.open_id):
            like = message.get("like") or {}
            self.show_like([message["id"]], like.get("status"), like.get("detail"))


def _liked(entry: Entry, message: dict[str, Any]) -> Entry:
    entry.like_status = (message.get("like") or {}).get("status")
    return entry


class TurnReader:
    """What one turn's events do to the conversation: the answer streamed into Markdown,
    the steps, the session a first message made, the end."""

    def __init__(
        self, conversation: Conversation, user: UserEntry | None, replaces: list[Widget]
    ) -> None:
        self.conversation, self.user = conversation, user
        self.replaces = replaces  # the old answer of a regenerate, gone once the server accepts
        self.answer: AnswerEntry | None = None
        self.stream: MarkdownStream | None = None
        self.streamed = False

    async def read(self, event: Event) -> None:
        conversation = self.conversation
        if not self.streamed:  # the server answered: once per turn, not per token
            self.streamed = True
            conversation.reached = True
            if self.replaces:
                await conversation.remove_children(self.replaces)
        if isinstance(event, Token):
            if self.answer is None:
                self.answer = AnswerEntry()
                await conversation.mount(self.answer)
                self.stream = Markdown.get_stream(self.answer.markdown)
            assert self.stream is not None
            await self.stream.write(event.text)  # the anchored view follows it
        elif isinstance(event, SessionStarted):
            conversation.session = await conversation.api.session(event.session_id)
        elif isinstance(event, STEPS):
            await self.close()
            self.answer = None
            await conversation.show_step(event)
        elif isinstance(event, Done):
            await self.close()
            await conversation.finish_turn(dict(event.result), self.user, self.answer)
        elif isinstance(event, TurnError):
            raise ApiError(event.status, event.error.code, event.error.message)

    async def close(self) -> None:
        await stopped(self.stream)
        self.stream = None
