"""The chat screen of `eonyx chat`: header, conversation, prompt, footer.

It resumes the session updated last (or the one given, or none with --new: the first message
then creates it). A message is sent as a streamed turn; tokens go into a Markdown answer as
they come, tool steps fold under their call, memory writes show as one line. A failed or
stopped turn leaves the user's message saved on the server and Ctrl+R answers it again; so
does a chat reopened on an unanswered message. A message the server refused or never got goes
back into the prompt.
Everything goes through `AsyncApiClient`; the live events socket runs in a thread and its events
come back to this loop with `call_from_thread`.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import events, on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.reactive import var
from textual.suggester import SuggestFromList
from textual.widgets import Footer, Input, Markdown, OptionList, Static
from textual.widgets.markdown import MarkdownStream
from textual.widgets.option_list import Option
from textual.worker import Worker, WorkerCancelled, WorkerFailed

from cli.api_client import AsyncApiClient
from cli.api_error import ApiError
from cli.chat import commands
from cli.chat.manager import Confirm, SessionManager
from cli.chat.widgets import (
    AnswerEntry,
    Entry,
    Notice,
    SessionHeader,
    StepEntry,
    UserEntry,
    WorkerGroups,
)
from cli.stream import Done, Failed, SessionMade, Step, Token, memory_line
from shared.core.messages import MAX_MESSAGE_CHARS, content_text

SHOWN_MESSAGES = 120  # the tail of a long transcript that is drawn on opening
POLL_SECONDS = 2.0  # without the events socket: how often pending titles and likes are asked
RECONNECT_SECONDS = (1.0, 2.0, 5.0, 15.0)  # the events socket's waits before trying again


def message_kept(exc: ApiError, *, streamed: bool) -> bool:
    """Whether the server kept the message of a failed turn: it did once the stream began,
    after a model failure (502), and maybe when the connection broke after sending. A refusal
    (4xx) or a server that could not be reached kept nothing."""
    return streamed or exc.status == 502 or exc.code == "stream_broken"


async def stopped(stream: MarkdownStream | None) -> None:
    """The Markdown stream flushed and ended, if one is open."""
    if stream is not None:
        await stream.stop()


class PromptInput(Input):
    """The message line; Tab completes a /command.

    Typed characters are inserted in batches: a paste that a terminal without bracketed paste
    sends key by key (50,000 keys) would otherwise redraw, re-measure and post `Changed` with
    the whole line once per key, quadratic in its length. The first key of a run schedules one
    insert behind the keys already queued, which all join it. Past the server's limit on a
    message the rest is refused, and the limit is named."""

    BINDINGS = [Binding("tab", "complete", "Complete", show=False)]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.typed: list[str] = []
        self.refused_at: str | None = None  # the full line the limit was last named at

    async def _on_key(self, event: events.Key) -> None:
        if event.is_printable and self.selection.is_empty:
            assert event.character is not None
            event.stop()
            event.prevent_default()
            if not self.typed:
                self.call_later(self.insert_typed)
            self.typed.append(event.character)
            return
        self.insert_typed()  # what was typed before this key comes first
        await super()._on_key(event)

    def insert_typed(self) -> None:
        if not self.typed:
            return
        typed, self.typed = "".join(self.typed), []
        room = MAX_MESSAGE_CHARS - len(self.value)
        cut = len(typed) > room
        if cut:
            typed = typed[: max(room, 0)]
        if typed:
            self.insert_text_at_cursor(typed)
        if cut and self.value != self.refused_at:  # named once per full line, not per key
            self.refused_at = self.value
            self.notify(
                f"a message holds at most {MAX_MESSAGE_CHARS:,} characters: the rest was not typed",
                severity="error",
            )

    async def action_submit(self) -> None:
        self.insert_typed()
        await super().action_submit()

    def action_complete(self) -> None:
        matches = commands.completions(self.value)
        if matches and self.value != f"/{matches[0].name} ":
            self.value = f"/{matches[0].name} "
            self.cursor_position = len(self.value)
        else:
            self.screen.focus_next()


class ChatApp(WorkerGroups, App[None]):
    """The open session (`session`, None for a new one) is a reactive variable: whatever
    changes it (opening, a rename, a title event, the session manager), the header follows."""

    CSS_PATH = "chat.tcss"
    TITLE = "eonyx chat"
    session: var[dict[str, Any] | None] = var(None, always_update=True, init=False)
    BINDINGS = [
        Binding("ctrl+s", "sessions", "Sessions"),
        Binding("ctrl+r", "retry", "Retry"),
        Binding("escape", "stop", "Stop", show=False),
        Binding("ctrl+c", "interrupt", "Stop", show=False, priority=True),
        Binding("ctrl+up", "select(-1)", "Select", show=False),
        Binding("ctrl+down", "select(1)", "Select", show=False),
        Binding("ctrl+q", "quit", "Quit"),
    ]

    def __init__(
        self,
        api: AsyncApiClient,
        *,
        session_id: str | None = None,
        new: bool = False,
        project: dict[str, Any] | None = None,
        workdir: Path | None = None,
        live_events: bool = True,
    ) -> None:
        super().__init__()
        self.api = api
        self.start_id, self.start_new = session_id, new
        self.project = project or {}
        self.workdir = workdir or Path.cwd()
        self.live_events = live_events
        # The slash commands by name; each is checked against commands.COMMANDS first.
        self.commands: dict[str, Callable[[str], Awaitable[None]]] = {
            name: getattr(self, f"{name}_command") for name in commands.NAMES
        }
        self.turn: Worker[None] | None = None
        self.can_retry = False
        self.events_live = False
        self.reconnects = 0
        self.stop_events = threading.Event()
        self.steps: dict[str, StepEntry] = {}

    def compose(self) -> ComposeResult:
        yield SessionHeader(id="header")
        yield VerticalScroll(id="conversation")
        yield OptionList(id="commands")
        yield PromptInput(
            placeholder="Message, or / for commands",
            id="prompt",
            suggester=SuggestFromList([f"/{n}" for n in commands.NAMES]),
        )
        yield Static(Text(self.project_line()), id="project")
        yield Footer()

    def project_line(self) -> str:
        if "system_prompt" in self.project:
            return "system prompt replaced (--system-prompt or eonyx.json): no AGENTS.md sent"
        paths = [f["path"] for f in self.project.get("project_context") or []]
        return "AGENTS.md in effect: " + ", ".join(paths) if paths else "no AGENTS.md in effect"

    def on_mount(self) -> None:
        self.query_one("#commands").display = False
        self.query_one("#prompt").focus()
        self.start()
        if self.live_events:
            self.listen_events()
        self.set_interval(POLL_SECONDS, self.poll)

    async def on_unmount(self) -> None:
        self.stop_events.set()
        await self.api.aclose()

    @property
    def conversation(self) -> VerticalScroll:
        return self.query_one("#conversation", VerticalScroll)

    @property
    def open_id(self) -> str:
        """The open session's id, for the commands that need one (`needs_session`)."""
        assert self.session is not None
        return str(self.session["id"])

    def watch_session(self, session: dict[str, Any] | None) -> None:
        self.query_one(SessionHeader).show_session(session)

    @property
    def streaming(self) -> bool:
        return self.turn is not None and self.turn.is_running

    # -- start-up and opening sessions --

    @work(exclusive=True, group="open")
    async def start(self) -> None:
        try:
            if self.start_id:
                session: dict[str, Any] | None = await self.api.session(self.start_id)
            elif self.start_new:
                await self.api.list_sessions(limit=1)  # the server and the token answer
                session = None
            else:
                session = await self.api.latest_session()
            await self.open_session(session)
        except ApiError as exc:
            self.exit(return_code=1, message=f"eonyx chat: {exc}")

    async def open_session(self, session: dict[str, Any] | None) -> None:
        """Show `session` (None: a new one, created by the first message)."""
        self.session, self.can_retry = session, False
        self.steps.clear()
        await self.conversation.remove_children()
        gauge = self.query_one("#gauge")
        gauge.display = False
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
            self.show_gauge(context.get("percent"))

    async def show_transcript(self, messages: list[dict[str, Any]]) -> None:
        hidden = len(messages) - SHOWN_MESSAGES
        entries: list[Any] = []
        if hidden > 0:
            entries.append(Notice(f"{hidden} earlier messages are not shown (/export has all)"))
            messages = messages[hidden:]
        for message in messages:
            role, text = message.get("role"), content_text(message.get("content"))
            if role == "user":
                entries.append(self._liked(UserEntry(text, message.get("id")), message))
            elif role == "assistant" and message.get("tool_calls"):
                if text.strip():
                    entries.append(AnswerEntry(text))
                for call in message["tool_calls"]:
                    step = StepEntry(call)
                    self.steps[step.call_id] = step
                    entries.append(step)
            elif role == "tool" and message.get("tool_call_id") in self.steps:
                self.steps[message["tool_call_id"]].set_result(text)
            elif role == "assistant":
                entries.append(self._liked(AnswerEntry(text, message.get("id")), message))
        await self.conversation.mount_all(entries)
        for entry in entries:
            if isinstance(entry, Entry) and entry.like_status:
                entry.show_like(entry.like_status)
        self.conversation.scroll_end(animate=False)

    @staticmethod
    def _liked(entry: Entry, message: dict[str, Any]) -> Entry:
        entry.like_status = (message.get("like") or {}).get("status")
        return entry

    def show_reachable(self, reachable: bool) -> None:
        self.query_one(SessionHeader).show_reachable(reachable, self.api.url)

    def show_gauge(self, percent: float | None) -> None:
        self.query_one(SessionHeader).query_one("#gauge").show(percent)  # type: ignore[attr-defined]

    # -- the prompt --

    @on(Input.Changed, "#prompt")
    def _typing(self, event: Input.Changed) -> None:
        matches = commands.completions(event.value)
        menu = self.query_one("#commands", OptionList)
        menu.clear_options()
        menu.add_options(Option(Text(f"{c.usage:<18} {c.help}"), id=c.name) for c in matches)
        menu.display = bool(matches)

    @on(Input.Submitted, "#prompt")
    def _submitted(self, event: Input.Submitted) -> None:
        if not event.value.strip():
            return
        parsed = commands.parse(event.value)
        if parsed.command is None and self.streaming:
            self.notify("an answer is still coming: Esc stops it", severity="warning")
            return
        event.input.value = ""
        if parsed.command is not None:
            self.run_command(parsed.command, parsed.argument)
        else:
            self.turn = self.send({"content": parsed.argument, **self.project})

    # -- turns --

    @work(group="turn")
    async def send(self, body: dict[str, Any]) -> None:
        """One streamed turn; a fresh message is shown at once, a retry re-uses the shown one.
        A message typed while the session is still opening waits for it: opening clears the
        conversation (seen under tmux: the message vanished from the screen, answered)."""
        for opening in self.workers_in("open"):
            with contextlib.suppress(WorkerCancelled, WorkerFailed):  # it says so itself
                await opening.wait()
        conversation = self.conversation
        user: UserEntry | None = None
        if not body.get("retry"):
            user = UserEntry(body["content"])
            await conversation.mount(user)
            conversation.scroll_end(animate=False)
        self.can_retry = False
        conversation.anchor()  # stay at the end as the answer grows, until the user scrolls up
        answer: AnswerEntry | None = None
        stream: MarkdownStream | None = None
        streamed = False
        session_id = None if self.session is None else self.open_id
        try:
            async for event in self.api.stream_turn(session_id, body):
                if not streamed:  # the server answered: once per turn, not per token
                    streamed = True
                    self.show_reachable(True)
                if isinstance(event, Token):
                    if answer is None:
                        answer = AnswerEntry()
                        await conversation.mount(answer)
                        stream = Markdown.get_stream(answer.markdown)
                    assert stream is not None
                    await stream.write(event.text)  # the anchored view follows it
                elif isinstance(event, SessionMade):
                    self.session = await self.api.session(event.session_id)
                elif isinstance(event, Step):
                    await stopped(stream)
                    answer = stream = None
                    await self.show_step(event.kind, event.data)
                elif isinstance(event, Done):
                    await stopped(stream)
                    stream = None
                    await self.finish_turn(event.turn, user, answer)
                elif isinstance(event, Failed):
                    raise ApiError(event.status, event.code, event.message)
        except ApiError as exc:
            if message_kept(exc, streamed=streamed):
                await self.turn_failed(exc)
            else:
                await self.turn_refused(exc, body.get("content"), user)
        except asyncio.CancelledError:
            await conversation.mount(
                Notice("stopped: your message is saved; Ctrl+R asks for the answer again", "info")
            )
            self.can_retry = self.session is not None
            raise
        finally:
            await stopped(stream)
            conversation.scroll_end(animate=False)

    async def show_step(self, name: str, data: dict[str, Any]) -> None:
        if name == "tool_call":
            step = StepEntry(data)
            self.steps[step.call_id] = step
            await self.conversation.mount(step)
        elif name == "tool_result":
            step_of = self.steps.get(str(data.get("tool_call_id")))
            if step_of is not None:
                step_of.set_result(content_text(data.get("content")))
        else:
            await self.conversation.mount(Notice(f"memory: {memory_line(data)}", "memory"))

    async def finish_turn(
        self, turn: dict[str, Any], user: UserEntry | None, answer: AnswerEntry | None
    ) -> None:
        final = turn.get("assistant_message") or {}
        if user is not None:
            user.message_id = (turn.get("user_message") or {}).get("id")
        if answer is None:
            answer = AnswerEntry(content_text(final.get("content")))
            await self.conversation.mount(answer)
        answer.message_id = final.get("id")
        self.show_gauge((turn.get("context") or {}).get("percent"))
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
        await self.conversation.mount(Notice(f"{exc}{hint}", "error"))

    async def turn_refused(self, exc: ApiError, content: Any, user: UserEntry | None) -> None:
        """Nothing was saved: the message leaves the conversation and goes back into the
        prompt (a first message made no session: the server makes it on acceptance)."""
        if exc.status == 0:
            self.show_reachable(False)
        if user is not None:
            await user.remove()
        prompt = self.query_one("#prompt", PromptInput)
        back = isinstance(content, str) and not prompt.value
        if back:
            prompt.value = content
            prompt.cursor_position = len(content)
        where = "; your message is back in the box" if back else ""
        await self.conversation.mount(Notice(f"{exc}{where}", "error"))

    def action_stop(self) -> None:
        if self.streaming:
            assert self.turn is not None
            self.turn.cancel()
        elif not isinstance(self.focused, Input):
            self.query_one("#prompt").focus()

    def action_interrupt(self) -> None:
        """Ctrl+C stops an answer; it never quits by accident (Ctrl+Q or /quit do)."""
        if self.streaming:
            self.action_stop()
        else:
            self.notify("nothing to stop: Ctrl+Q or /quit leaves")

    def action_retry(self) -> None:
        if self.streaming or not self.can_retry:
            self.notify("nothing to retry", severity="warning")
            return
        self.turn = self.send({"retry": True, **self.project})

    # -- commands --

    @work(group="command")
    async def run_command(self, name: str, argument: str) -> None:
        try:
            await self.command(name, argument)
        except ApiError as exc:
            await self.say(f"/{name}: {exc}", "error")

    async def command(self, name: str, argument: str) -> None:
        spec = commands.BY_NAME.get(name)
        if spec is None:
            await self.say(commands.unknown(name), "error")
            return
        refused = commands.refusal(
            spec, streaming=self.streaming, in_session=self.session is not None
        )
        if refused:
            await self.say(refused, "error")
            return
        await self.commands[name](argument)

    async def quit_command(self, _argument: str) -> None:
        self.exit()

    async def help_command(self, _argument: str) -> None:
        await self.conversation.mount(AnswerEntry(commands.help_text()))
        self.conversation.scroll_end(animate=False)

    async def new_command(self, _argument: str) -> None:
        await self.open_session(None)

    async def sessions_command(self, query: str) -> None:
        self.action_sessions(query or None)

    async def rename_command(self, title: str) -> None:
        if not title:
            await self.say("/rename needs the new title: /rename <title>", "error")
            return
        renamed = await self.api.update_session(self.open_id, title=title)
        self.session = renamed
        await self.say(f"renamed to {renamed['title']!r}")

    async def clear_command(self, _argument: str) -> None:
        question = "Wipe this session's history? Its id and title stay; this cannot be undone."
        if not await self.push_screen_wait(Confirm(question)):
            await self.say("not cleared")
            return
        await self.api.clear(self.open_id)
        await self.open_session(await self.api.session(self.open_id))
        await self.say("cleared: the history is wiped; the id and title stay")

    async def fork_command(self, _argument: str) -> None:
        origin = (self.session or {}).get("title") or "untitled"
        await self.open_session(await self.api.fork(self.open_id))
        await self.say(f"forked {origin!r}: you are in the copy now")

    async def export_command(self, _argument: str) -> None:
        path = await self.export()
        await self.say(f"exported to {path}")

    async def export(self) -> Path:
        assert self.session is not None
        text = await self.api.export_markdown(self.session["id"])
        folder = self.workdir / ".eonyx" / "exports"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"eonyx-{self.session['id']}.md"
        path.write_text(text, encoding="utf-8")
        return path

    async def say(self, text: str, kind: str = "info") -> None:
        await self.conversation.mount(Notice(text, kind))
        self.conversation.scroll_end(animate=False)

    # -- the session manager --

    def action_sessions(self, query: str | None = None) -> None:
        if isinstance(self.screen, SessionManager):
            return
        self.push_screen(SessionManager(self.api, query), self._manager_closed)

    def _manager_closed(self, session_id: str | None) -> None:
        self.query_one("#prompt").focus()
        if session_id:
            if self.streaming:  # another session replaces this conversation: stop its answer
                self.action_stop()
            self.open_by_id(session_id)

    @work(exclusive=True, group="open")
    async def open_by_id(self, session_id: str) -> None:
        try:
            await self.open_session(await self.api.session(session_id))
        except ApiError as exc:
            await self.say(str(exc), "error")

    @on(SessionManager.Changed)
    def session_changed(self, event: SessionManager.Changed) -> None:
        """The manager changed a session: the header follows when it is this one."""
        if self.session is not None and self.session["id"] == event.item["id"]:
            self.session = event.item

    @on(SessionManager.Deleted)
    def session_deleted(self, event: SessionManager.Deleted) -> None:
        if self.session is not None and self.session["id"] == event.session_id:
            self.session = None
            self.call_later(self.open_session, None)

    # -- selecting and liking messages --

    def action_select(self, step: int) -> None:
        entries = [e for e in self.conversation.query(Entry) if e.message_id]
        if not entries:
            return
        focused = self.focused
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
                await self.api.unlike(self.session["id"], entry.message_id)
                self._show_like([entry.message_id], None, None)
            else:
                like = await self.api.like(self.session["id"], entry.message_id)
                ids = like.get("message_ids") or [entry.message_id]
                self._show_like(ids, like.get("status"), like.get("detail"))
        except ApiError as exc:
            self.notify(str(exc), severity="error")

    def _show_like(self, message_ids: list[str], status: str | None, detail: str | None) -> None:
        for entry in self.conversation.query(Entry):
            if entry.message_id in message_ids:
                entry.show_like(status, detail)

    # -- live events --

    @work(thread=True, exclusive=True, group="events")
    def listen_events(self) -> None:
        reason, reachable = self.api.listen(self._from_thread, self.stop_events)
        if not self.stop_events.is_set():
            self._from_thread({"type": "closed", "reason": reason, "unreachable": not reachable})

    def _from_thread(self, event: dict[str, Any]) -> None:
        try:
            self.call_from_thread(self.on_server_event, event)
        except RuntimeError:
            self.stop_events.set()  # the app is gone

    def on_server_event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "ready":
            self.events_live, self.reconnects = True, 0
            self.show_reachable(True)
        elif kind == "closed":
            self.events_live = False
            if event.get("unreachable"):
                self.show_reachable(False)
            wait = RECONNECT_SECONDS[min(self.reconnects, len(RECONNECT_SECONDS) - 1)]
            self.reconnects += 1
            self.set_timer(wait, self.listen_events)
        elif kind == "session.title":
            session_id = str(event.get("session_id") or event.get("id") or "")
            title = event.get("title")
            if self.session is not None and self.session["id"] == session_id:
                self.session = {**self.session, "title": title, "title_pending": False}
            for screen in self.screen_stack:
                if isinstance(screen, SessionManager):
                    screen.title_changed(session_id, title)
        elif (
            kind == "like.updated"
            and self.session is not None
            and event.get("session_id") == self.session["id"]
        ):
            ids = event.get("message_ids") or [event.get("pair_id")]
            self._show_like(ids, event.get("status"), event.get("detail"))

    @work(exclusive=True, group="poll")
    async def poll(self) -> None:
        """Without the socket: ask for a pending title or a like still saving."""
        if self.events_live or self.session is None or self.streaming:
            return
        session_id = self.session["id"]
        try:
            if self.session.get("title_pending"):
                fresh = await self.api.session(session_id)
                if self.session is not None and self.session["id"] == fresh["id"]:
                    self.session = fresh
            if any(e.like_status == "saving" for e in self.conversation.query(Entry)):
                for message in await self.api.messages(session_id):
                    like = message.get("like") or {}
                    self._show_like([message["id"]], like.get("status"), like.get("detail"))
        except ApiError:
            pass  # the next poll asks again
