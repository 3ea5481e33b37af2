"""The session manager (Ctrl+S or /sessions): the server's list, page by page as you scroll.

Rows come in the server's order (pinned first, then most recently updated) and show the
title, `YYYY/MM/DD HH:mm`, the message count and a badge for api and teams sessions; a
search hit found in its text has the server's snippet on a second line, the words found
marked, as the web client shows it (a hit on the title is marked in the title). Keys:
Enter opens, r renames, f forks, d deletes (to the trash, after a confirmation), p pins,
a archives, / searches titles and text. Titles still being written by the title job update
live from the app's events socket (`title_changed`); without the socket (`events_live`, which
the app keeps up to date) the list refreshes itself while such a title is on screen. It reads
nothing of the app: what it changes it posts (`Changed`, `Deleted`), and Enter dismisses it
with the session to open.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Footer, Input, Static

from cli.api_client import AsyncApiClient, counted, format_time
from cli.api_error import ApiError
from cli.chat.widgets import BADGED_SOURCES, WorkerGroups

NEAR_END = 10  # rows from the end at which the next page is fetched
POLL_SECONDS = 2.0  # refresh period for pending titles when there is no events socket
SNIPPET_SHOWN = 72  # characters of a snippet shown: the list keeps its other columns in view


class SessionTable(DataTable[Any]):
    BINDINGS = [  # the cursor goes along, so End reaches the end of what is loaded
        Binding("home", "scroll_top", "Top", show=False),
        Binding("end", "scroll_bottom", "End", show=False),
    ]

    class NearEnd(Message):
        """Scrolled (or moved) close enough to the end to want the next page."""

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if self.max_scroll_y - new_value < NEAR_END:
            self.post_message(self.NearEnd())


def title_cell(item: dict[str, Any]) -> Text:
    """The title, then a search hit's snippet on a line of its own."""
    text = Text()
    if item.get("pinned"):
        text.append("* ", style="bold")
    if item.get("source") in BADGED_SOURCES:
        text.append(f" {item['source']} ", style="reverse")
        text.append(" ")
    title = item.get("title")
    found = item.get("snippet") or {}
    if title and (item.get("match") or {}).get("role") == "title":
        text.append_text(marked(title, found.get("highlights", [])))
    elif title:
        text.append(title)
    else:
        text.append("titling…" if item.get("title_pending") else "untitled", style="italic dim")
    if has_snippet(item):
        shown = found["text"]
        if len(shown) > SNIPPET_SHOWN:  # the server's cut starts shortly before the first match
            shown = shown[: SNIPPET_SHOWN - 1] + "…"
        text.append("\n")
        text.append_text(marked(shown, found.get("highlights", []), style="dim"))
    return text


def has_snippet(item: dict[str, Any]) -> bool:
    """A search hit found in its text (a title's snippet would only repeat the title)."""
    return bool(item.get("snippet")) and (item.get("match") or {}).get("role") != "title"


def marked(text: str, highlights: list[list[int]], style: str = "") -> Text:
    """`text` with the [start, end) spans the server found made bold (never markup: the text
    is the user's)."""
    shown = Text(text, style=style)
    for start, end in highlights:
        shown.stylize("bold reverse", start, min(end, len(text)))
    return shown


class SessionManager(WorkerGroups, Screen[str | None]):
    """Dismissed with the id of the session to open, or None to go back. What it changes on
    the server it posts as `Changed` and `Deleted`, for the app to follow."""

    class Changed(Message):
        """A session was renamed, pinned or unpinned: `item` is what the server now holds."""

        def __init__(self, item: dict[str, Any]) -> None:
            super().__init__()
            self.item = item

    class Deleted(Message):
        """A session went to the trash."""

        def __init__(self, session_id: str) -> None:
            super().__init__()
            self.session_id = session_id

    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("r", "rename", "Rename"),
        Binding("f", "fork", "Fork"),
        Binding("d", "delete", "Delete"),
        Binding("p", "pin", "Pin"),
        Binding("a", "archive", "Archive"),
        Binding("slash", "search", "Search"),
    ]

    def __init__(
        self, api: AsyncApiClient, query: str | None = None, *, events_live: bool = False
    ) -> None:
        super().__init__()
        self.api = api
        self.events_live = events_live  # titles come by themselves: no refreshing
        self.query_text = query or ""
        self.items: dict[str, dict[str, Any]] = {}
        self.next_cursor: str | None = None
        # A page is being fetched. Not `loading`: that is Textual's own flag, which covers the
        # screen with a loading indicator that, under tmux, stayed drawn after the answer.
        self.fetching = False

    def compose(self) -> ComposeResult:
        with Vertical(id="manager"):
            yield Static("Sessions", id="manager-title")
            yield Input(self.query_text, placeholder="search titles and text", id="search")
            yield SessionTable(id="sessions", cursor_type="row")
            yield Static("", id="manager-status")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(SessionTable)
        table.add_column("title", key="title")
        table.add_column("updated", key="updated", width=16)
        table.add_column("messages", key="messages", width=8)
        self.query_one("#search").display = bool(self.query_text)
        table.focus()
        self.reload()
        self.set_interval(POLL_SECONDS, self._poll_pending)

    def on_screen_resume(self) -> None:
        """Back from a prompt: the keys go to the list again (the hidden search never)."""
        if not self.query_one("#search").display:
            self.query_one(SessionTable).focus()

    # -- loading --

    @work(exclusive=True, group="list")
    async def reload(self, select: str | None = None) -> None:
        """The first page again (after a search or a change that moves rows)."""
        self.fetching = True
        try:
            page = await self.api.list_sessions(query=self.query_text or None)
        except ApiError as exc:
            self.status(str(exc), error=True)
            return
        finally:
            self.fetching = False
        table = self.query_one(SessionTable)
        table.clear()
        self.items.clear()
        self._add(page)
        if select and select in self.items:
            table.move_cursor(row=table.get_row_index(select))
        found = len(self.items)
        where = f" matching {self.query_text!r}" if self.query_text else ""
        self.status(
            (f"{found}+ sessions" if self.next_cursor else counted(found, "session")) + where
            if found
            else f"no sessions{where}"
        )

    @work(group="more")
    async def load_more(self) -> None:
        if self.fetching or not self.next_cursor:
            return
        self.fetching = True
        try:
            page = await self.api.list_sessions(
                query=self.query_text or None, cursor=self.next_cursor
            )
            self._add(page)
        except ApiError as exc:
            self.status(str(exc), error=True)
        finally:
            self.fetching = False

    def _add(self, page: dict[str, Any]) -> None:
        table = self.query_one(SessionTable)
        for item in page["items"]:
            if item["id"] in self.items:
                continue
            self.items[item["id"]] = item
            height = 2 if has_snippet(item) else 1
            table.add_row(*self._cells(item), key=item["id"], height=height)
        self.next_cursor = page.get("next_cursor")

    @staticmethod
    def _cells(item: dict[str, Any]) -> tuple[Text, str, Text]:
        count = Text(str(item.get("message_count", 0)), justify="right")
        return title_cell(item), format_time(item["updated_at"]), count

    def _refresh_row(self, item: dict[str, Any]) -> None:
        """A changed session's row again, with the search hit's snippet it had."""
        old = self.items.get(item["id"], {})
        item = {"snippet": old.get("snippet"), "match": old.get("match"), **item}
        self.items[item["id"]] = item
        table = self.query_one(SessionTable)
        for column, value in zip(("title", "updated", "messages"), self._cells(item), strict=True):
            table.update_cell(item["id"], column, value)

    @on(SessionTable.NearEnd)
    def _near_end(self) -> None:
        self.load_more()

    @on(DataTable.RowHighlighted)
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.cursor_row >= event.data_table.row_count - NEAR_END:
            self.load_more()

    def title_changed(self, session_id: str, title: str | None) -> None:
        """A title pushed by the server (the title job finished, or a rename elsewhere)."""
        item = self.items.get(session_id)
        if item is not None:
            self._refresh_row({**item, "title": title, "title_pending": False})

    def _poll_pending(self) -> None:
        if self.events_live or self.fetching:
            return
        if any(item.get("title_pending") for item in self.items.values()):
            self.reload(select=self.selected())

    # -- the keys --

    def selected(self) -> str | None:
        table = self.query_one(SessionTable)
        if table.row_count == 0:
            return None
        row_key, _ = table.coordinate_to_cell_key(table.cursor_coordinate)
        return str(row_key.value)

    def status(self, text: str, *, error: bool = False) -> None:
        line = self.query_one("#manager-status", Static)
        line.update(Text(text))
        line.set_class(error, "-error")

    @on(DataTable.RowSelected)
    def action_open(self) -> None:
        session_id = self.selected()
        if session_id:
            self.dismiss(session_id)

    def action_back(self) -> None:
        search = self.query_one("#search", Input)
        if search.has_focus:
            self.query_one(SessionTable).focus()
            search.display = bool(self.query_text)
            return
        self.dismiss(None)

    def action_search(self) -> None:
        search = self.query_one("#search", Input)
        search.display = True
        search.focus()

    @on(Input.Submitted, "#search")
    def _search(self, event: Input.Submitted) -> None:
        self.query_text = event.value.strip()
        event.input.display = bool(self.query_text)
        self.query_one(SessionTable).focus()
        self.reload()

    @work(group="change")
    async def action_rename(self) -> None:
        session_id = self.selected()
        if not session_id:
            return
        current = self.items[session_id].get("title") or ""
        title = await self.app.push_screen_wait(Prompt("Rename the session", current))
        if title is None or not title.strip():
            return
        await self._change(session_id, self.api.update_session(session_id, title=title))

    @work(group="change")
    async def action_fork(self) -> None:
        session_id = self.selected()
        if not session_id:
            return
        try:
            fork = await self.api.fork(session_id)
        except ApiError as exc:
            self.status(str(exc), error=True)
            return
        self.status(f"forked into {fork.get('title') or fork['id']}")
        self.reload(select=fork["id"])

    @work(group="change")
    async def action_delete(self) -> None:
        session_id = self.selected()
        if not session_id:
            return
        title = self.items[session_id].get("title") or "untitled"
        question = f"Delete {title!r}? It goes to the trash."
        if not await self.app.push_screen_wait(Confirm(question)):
            return
        try:
            await self.api.delete_session(session_id)
        except ApiError as exc:
            self.status(str(exc), error=True)
            return
        self.items.pop(session_id, None)
        self.query_one(SessionTable).remove_row(session_id)
        self.status(f"deleted {title!r} (to the trash)")
        self.post_message(self.Deleted(session_id))

    @work(group="change")
    async def action_pin(self) -> None:
        session_id = self.selected()
        if session_id:
            pinned = not self.items[session_id].get("pinned")
            await self._change(session_id, self.api.update_session(session_id, pinned=pinned))
            self.reload(select=session_id)  # pinned rows move to the top

    @work(group="change")
    async def action_archive(self) -> None:
        session_id = self.selected()
        if not session_id:
            return
        try:
            await self.api.update_session(session_id, archived=True)
        except ApiError as exc:
            self.status(str(exc), error=True)
            return
        title = self.items.pop(session_id).get("title") or "untitled"
        self.query_one(SessionTable).remove_row(session_id)
        self.status(f"archived {title!r}")

    async def _change(self, session_id: str, call: Any) -> None:
        try:
            item = await call
        except ApiError as exc:
            self.status(str(exc), error=True)
            return
        self._refresh_row(item)
        self.post_message(self.Changed(item))


class Prompt(ModalScreen[str | None]):
    """One line of text, prefilled; Esc cancels."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, question: str, value: str = "") -> None:
        super().__init__()
        self.question, self.value = question, value

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static(self.question)
            yield Input(self.value, id="answer")

    @on(Input.Submitted)
    def _done(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class Confirm(ModalScreen[bool]):
    """y or Enter confirms; n or Esc declines."""

    BINDINGS = [
        Binding("y,enter", "answer(True)", "Yes"),
        Binding("n,escape", "answer(False)", "No"),
    ]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static(Text(self.question))
            yield Static("y: yes    n: no", classes="hint")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
