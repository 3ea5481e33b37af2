"""The message line of `eonyx chat`: Tab completes a /command, and typing stops at the
server's limit on a message (cli/chat/commands.py knows the commands)."""

from __future__ import annotations

from typing import Any

from textual import events
from textual.binding import Binding
from textual.widgets import Input

from cli.chat import commands
from shared.core.messages import MAX_MESSAGE_CHARS


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
