"""The chat screen of `eonyx chat`: header, conversation, prompt, footer.

It resumes the session updated last (or the one given, or none with --new: the first message
then makes it on the server). The app wires three parts and runs the slash commands:
the conversation (cli/chat/conversation.py) owns the open session and its turns, and the
header follows its reactive variables; the live events (cli/chat/live.py) post the server's
events as messages; the session manager (cli/chat/manager.py, Ctrl+S) posts what it changed
and is dismissed with the session to open. Everything goes through `AsyncApiClient`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.suggester import SuggestFromList
from textual.widgets import Footer, Input, OptionList, Static
from textual.widgets.option_list import Option

from cli.api_client import AsyncApiClient
from cli.api_error import ApiError
from cli.chat import actions, commands
from cli.chat.conversation import Conversation, Session
from cli.chat.live import LiveEvents
from cli.chat.manager import SessionManager
from cli.chat.prompt import PromptInput
from cli.chat.widgets import Gauge, SessionHeader, WorkerGroups

POLL_SECONDS = 2.0  # without the events socket: how often pending titles and likes are asked


class ChatApp(WorkerGroups, App[None]):
    """The open session (`session`, None for a new one) is the conversation's: whatever
    changes it (opening, a rename, a title event, the session manager), the header follows."""

    CSS_PATH = "chat.tcss"
    TITLE = "eonyx chat"
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
        # The slash commands on the session; the app's own are its `<name>_command` methods.
        self.actions = actions.on_the_conversation(self.workdir)

    def compose(self) -> ComposeResult:
        yield SessionHeader(id="header")
        yield Conversation(self.api, self.give_back, id="conversation")
        yield OptionList(id="commands")
        yield PromptInput(
            placeholder="Message, or / for commands",
            id="prompt",
            suggester=SuggestFromList([f"/{n}" for n in commands.NAMES]),
        )
        yield Static(Text(self.project_line()), id="project")
        yield Footer()
        yield LiveEvents(self.api)

    def project_line(self) -> str:
        if "system_prompt" in self.project:
            return "system prompt replaced (--system-prompt or eonyx.json): no AGENTS.md sent"
        paths = [f["path"] for f in self.project.get("project_context") or []]
        return "AGENTS.md in effect: " + ", ".join(paths) if paths else "no AGENTS.md in effect"

    def on_mount(self) -> None:
        self.query_one("#commands").display = False
        self.query_one("#prompt").focus()
        header = self.query_one(SessionHeader)
        self.watch(self.conversation, "session", header.show_session)
        self.watch(self.conversation, "percent", header.query_one(Gauge).show)
        self.watch(self.conversation, "reached", self.show_reachable)
        self.conversation.load(self.first_session, at_start=True)
        if self.live_events:
            self.live.listen()
        self.set_interval(POLL_SECONDS, self.poll)

    async def on_unmount(self) -> None:
        await self.api.aclose()

    @property
    def conversation(self) -> Conversation:
        return self.query_one(Conversation)

    @property
    def live(self) -> LiveEvents:
        return self.query_one(LiveEvents)

    @property
    def session(self) -> Session | None:
        return self.conversation.session

    @session.setter
    def session(self, session: Session | None) -> None:
        self.conversation.session = session

    @property
    def open_id(self) -> str:
        """The open session's id, for the commands that need one (`needs_session`)."""
        return self.conversation.open_id

    @property
    def streaming(self) -> bool:
        return self.conversation.streaming

    @property
    def can_retry(self) -> bool:
        return self.conversation.can_retry

    @property
    def events_live(self) -> bool:
        return self.live.live

    def show_reachable(self, reachable: bool) -> None:
        self.query_one(SessionHeader).show_reachable(reachable, self.api.url)

    # -- start-up and opening sessions --

    async def first_session(self) -> Session | None:
        if self.start_id:
            found: Session | None = await self.api.session(self.start_id)
            return found
        if self.start_new:
            await self.api.list_sessions(limit=1)  # the server and the token answer
            return None
        return await self.api.latest_session()

    @on(Conversation.OpenFailed)
    async def _open_failed(self, event: Conversation.OpenFailed) -> None:
        if event.at_start:
            self.exit(return_code=1, message=f"eonyx chat: {event.error}")
        else:
            await self.say(str(event.error), "error")

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
            self.conversation.send({"content": parsed.argument, **self.project})

    def give_back(self, text: str) -> bool:
        """A refused message back into an empty prompt; whether it went back."""
        prompt = self.query_one("#prompt", PromptInput)
        if prompt.value:
            return False
        prompt.value = text
        prompt.cursor_position = len(text)
        return True

    # -- turns --

    def action_stop(self) -> None:
        if self.streaming:
            self.conversation.stop()
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
        self.conversation.send({"retry": True, **self.project})

    def action_select(self, step: int) -> None:
        self.conversation.select(step)

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
        if name in self.actions:
            await self.actions[name](self.conversation, argument)
        else:
            await getattr(self, f"{name}_command")(argument)

    async def quit_command(self, _argument: str) -> None:
        self.exit()

    async def sessions_command(self, query: str) -> None:
        self.action_sessions(query or None)

    async def regenerate_command(self, _argument: str) -> None:
        """The app's, not an action's: the turn carries the project part, as Ctrl+R's does."""
        self.conversation.send({"regenerate": True, **self.project})

    async def say(self, text: str, kind: str = "info") -> None:
        await self.conversation.say(text, kind)

    # -- the session manager --

    def action_sessions(self, query: str | None = None) -> None:
        if isinstance(self.screen, SessionManager):
            return
        manager = SessionManager(self.api, query, events_live=self.events_live)
        self.push_screen(manager, self._manager_closed)

    def _manager_closed(self, session_id: str | None) -> None:
        self.query_one("#prompt").focus()
        if session_id:
            if self.streaming:  # another session replaces this conversation: stop its answer
                self.action_stop()
            self.conversation.load(lambda: self.api.session(session_id), at_start=False)

    def managers(self) -> list[SessionManager]:
        return [screen for screen in self.screen_stack if isinstance(screen, SessionManager)]

    @on(SessionManager.Changed)
    def session_changed(self, event: SessionManager.Changed) -> None:
        """The manager changed a session: the header follows when it is this one."""
        if self.session is not None and self.session["id"] == event.item["id"]:
            self.session = event.item

    @on(SessionManager.Deleted)
    def session_deleted(self, event: SessionManager.Deleted) -> None:
        if self.session is not None and self.session["id"] == event.session_id:
            self.session = None
            self.call_later(self.conversation.open, None)

    # -- live events --

    def on_server_event(self, event: dict[str, Any]) -> None:
        """An event as the socket delivers it (tests hand them in directly)."""
        self.live.deliver(event)

    @on(LiveEvents.Ready)
    def _events_ready(self) -> None:
        self.show_reachable(True)
        for manager in self.managers():
            manager.events_live = True

    @on(LiveEvents.Closed)
    def _events_closed(self, event: LiveEvents.Closed) -> None:
        if event.unreachable:
            self.show_reachable(False)
        for manager in self.managers():
            manager.events_live = False

    @on(LiveEvents.Titled)
    def _titled(self, event: LiveEvents.Titled) -> None:
        if self.session is not None and self.session["id"] == event.session_id:
            self.session = {**self.session, "title": event.title, "title_pending": False}
        for manager in self.managers():
            manager.title_changed(event.session_id, event.title)

    @on(LiveEvents.Liked)
    def _liked(self, event: LiveEvents.Liked) -> None:
        if self.session is not None and event.session_id == self.session["id"]:
            self.conversation.show_like(event.message_ids, event.status, event.detail)

    @work(exclusive=True, group="poll")
    async def poll(self) -> None:
        """Without the socket: ask for a pending title or a like still saving."""
        if self.events_live or self.session is None or self.streaming:
            return
        try:
            if self.session.get("title_pending"):
                fresh = await self.api.session(self.session["id"])
                if self.session is not None and self.session["id"] == fresh["id"]:
                    self.session = fresh
            await self.conversation.refresh_likes()
        except ApiError:
            pass  # the next poll asks again
