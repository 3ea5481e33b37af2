"""The pieces of the chat screen: the header with the `{ctx N%}` gauge, messages (a user's
line, an answer rendered as Markdown), tool steps that fold, and one-line notices."""

from __future__ import annotations

import json
from typing import Any

from rich.markup import escape
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.dom import DOMNode
from textual.message import Message
from textual.widgets import Collapsible, Markdown, Static
from textual.worker import Worker, WorkerState

from cli.stream import gauge_level, gauge_text, one_line

BADGED_SOURCES = ("api", "teams", "mcp")  # sessions that did not start in a person's client
LIKE_LABELS = {"saving": "♥ saving…", "saved": "♥ saved", "failed": "♥ failed"}


class WorkerGroups:
    """`workers_in(*groups)`: the workers of those groups still pending or running of this
    node and the nodes inside it (what a caller, or a test, waits for before reading the
    screen: the app's include its conversation's turn)."""

    def workers_in(self, *groups: str) -> list[Worker[Any]]:
        node = self
        assert isinstance(node, DOMNode)
        return [
            worker
            for worker in node.app.workers
            if isinstance(worker.node, DOMNode)
            and node in worker.node.ancestors_with_self
            and worker.group in groups
            and worker.state in (WorkerState.PENDING, WorkerState.RUNNING)
        ]


class Gauge(Static):
    """`{ctx N%}`; class -high from 80% (the compaction threshold), -alarm from 90%; hidden
    when the model has no context window."""

    def show(self, percent: float | None) -> None:
        text = gauge_text(percent)
        self.display = text is not None
        self.update(text or "")
        level = gauge_level(percent) if percent is not None else "calm"
        self.set_class(level == "high", "-high")
        self.set_class(level == "alarm", "-alarm")


class SessionHeader(Horizontal):
    def compose(self) -> ComposeResult:
        yield Static("new session", id="title")
        yield Static("", id="source")
        yield Static("", id="offline")
        yield Gauge("", id="gauge")

    def show_reachable(self, reachable: bool, url: str) -> None:
        """Said at once when the server stops answering, not only after a send."""
        offline = self.query_one("#offline", Static)
        offline.update("" if reachable else escape(f"cannot reach {url}"))
        offline.display = not reachable

    def show_session(self, session: dict[str, Any] | None) -> None:
        title = self.query_one("#title", Static)
        source = self.query_one("#source", Static)
        if session is None:
            title.update("new session")
            source.update("")
            return
        name = session.get("title") or ("titling…" if session.get("title_pending") else None)
        title.update(escape(name or "untitled"))
        source.update(escape(session.get("source") or ""))
        source.set_class(session.get("source") in BADGED_SOURCES, "-badge")


class Entry(Vertical):
    """A conversation entry that can be selected (focused); a liked one shows its status."""

    can_focus = True
    BINDINGS = [Binding("l", "like", "Remember this turn")]

    class LikeRequested(Message):
        def __init__(self, entry: Entry) -> None:
            super().__init__()
            self.entry = entry

    def __init__(self, message_id: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.message_id = message_id
        self.like_status: str | None = None

    def compose_like(self) -> Static:
        return Static("", classes="like")

    def show_like(self, status: str | None, detail: str | None = None) -> None:
        self.like_status = status
        label = LIKE_LABELS.get(status or "", "")
        if status == "failed" and detail:
            label += f": {detail}"
        like = self.query_one(".like", Static)
        like.update(escape(label))
        like.display = bool(label)

    def action_like(self) -> None:
        if self.message_id:
            self.post_message(self.LikeRequested(self))


class UserEntry(Entry):
    def __init__(self, text: str, message_id: str | None = None) -> None:
        super().__init__(message_id, classes="user")
        self.text = text

    def compose(self) -> ComposeResult:
        yield Static(escape(self.text), classes="text", markup=True)
        yield self.compose_like()


class AnswerEntry(Entry):
    """The assistant's text, as Markdown (code blocks highlighted); streamed into."""

    def __init__(self, text: str = "", message_id: str | None = None) -> None:
        super().__init__(message_id, classes="answer")
        self.text = text

    def compose(self) -> ComposeResult:
        yield Markdown(self.text)
        yield self.compose_like()

    @property
    def markdown(self) -> Markdown:
        return self.query_one(Markdown)


class StepEntry(Collapsible):
    """A tool call and, once it came, its result; folded by default."""

    def __init__(self, call: dict[str, Any]) -> None:
        function = call.get("function") or {}
        self.call_id = str(call.get("id") or "")
        self.tool = str(function.get("name") or "?")
        self.arguments = str(function.get("arguments") or "")
        self.body = Static(escape(self._body(None)), classes="step-body")
        super().__init__(
            self.body,
            title=self._heading(None),
            collapsed=True,
            classes="step",
        )

    def _heading(self, result: str | None) -> str:
        mark = "…" if result is None else "✓"
        return f"{mark} {self.tool}({one_line(self.arguments, 60)})"

    def _body(self, result: str | None) -> str:
        try:
            arguments = json.dumps(json.loads(self.arguments or "{}"), indent=2)
        except ValueError:
            arguments = self.arguments
        text = f"arguments:\n{arguments}"
        return text + (
            "\n\nwaiting for the result…" if result is None else f"\n\nresult:\n{result}"
        )

    def set_result(self, result: str) -> None:
        self.title = self._heading(result)
        self.body.update(escape(self._body(result)))  # also before it is mounted


class Notice(Static):
    """One line: a memory write, what a command did, or an error (kind: memory/info/error)."""

    def __init__(self, text: str, kind: str = "info") -> None:
        super().__init__(escape(text), classes=f"notice -{kind}")
        self.text, self.kind = text, kind
