"""`ApiError`: how the console clients (the click commands, the terminal app, the MCP server)
hear that the API refused a call or could not be reached.

A plain exception (a `cli.CommandError`), so that the Textual app and the MCP server need
no click; the click group (`cli.EonyxGroup`) prints it as a click error (exit 1). Its text is
the server's `message (code)` plus a hint of what to do next (log in again on a 401, retry a
saved message); status 0 when the server could not be reached or the connection broke
mid-turn.
"""

from __future__ import annotations

from cli import CommandError


class ApiError(CommandError):
    """A call the server refused (status, code, message) or could not answer (status 0);
    `hint` says what the user can do next (log in again, retry the saved message);
    `session_id` names the session a turn's message is saved in, when it is."""

    session_id: str | None = None

    def __init__(self, status: int, code: str, message: str, hint: str | None = None) -> None:
        if hint is None:
            hint = "; run `eonyx login`" if status == 401 else ""
        self.message = (f"{message} ({code})" if code else message) + hint
        super().__init__(self.message)
        self.status, self.code, self.reason, self.hint = status, code, message, hint

    def __str__(self) -> str:
        return self.message
