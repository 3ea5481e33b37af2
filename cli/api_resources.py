"""What the console clients ask of the API, one method per call, named by what it does
(`session(id)`, `update_session(id, title=...)`, `memory(kind)`): the click commands, the
terminal app and the MCP server never spell a path.

Written once for both faces of the client: each method describes its call and hands it to
`call`, which the blocking client (`ApiClient`) answers with the parsed body and the asynchronous
one (`AsyncApiClient`) with an awaitable of it. `pick` names the one field of the body the
caller wants (`items` of a list); `raw` asks for the response itself (a download).
Turns, streamed or not, are the clients' own methods: they read a stream.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

LIST_PAGE = 50
SOURCE = "cli"  # the sessions the console clients make (shared.index.listing.CONSOLE_SOURCE)

R = TypeVar("R")


def page_params(
    query: str | None = None, cursor: str | None = None, limit: int = LIST_PAGE, **filters: Any
) -> dict[str, Any]:
    """A listing's query string: the filters given (None and empty left out)."""
    params: dict[str, Any] = {"limit": limit, "q": query, "cursor": cursor, **filters}
    return {k: v for k, v in params.items() if v is not None and v != ""}


class Resources(Generic[R]):
    """The API's resources; `R` is what a call gives back (a body, or an awaitable of one)."""

    def call(
        self, method: str, path: str, *, pick: str | None = None, raw: bool = False, **kw: Any
    ) -> R:
        raise NotImplementedError

    # -- accounts and keys --

    def login(self, username: str, password: str) -> R:
        return self.call("POST", "/auth/login", json={"username": username, "password": password})

    def tokens(self) -> R:
        return self.call("GET", "/tokens")

    def current_token(self) -> R:
        """The key's own row: its scopes (what the MCP server may offer)."""
        return self.call("GET", "/tokens/current")

    def create_token(self, name: str, scopes: list[str]) -> R:
        return self.call("POST", "/tokens", json={"name": name, "scopes": scopes})

    def revoke_token(self, token_id: str) -> R:
        return self.call("DELETE", f"/tokens/{token_id}")

    # -- sessions --

    def list_sessions(
        self,
        query: str | None = None,
        cursor: str | None = None,
        limit: int = LIST_PAGE,
        **filters: Any,
    ) -> R:
        """One page: `{items, next_cursor}` (filters: archived, trash, folder_id, source)."""
        return self.call("GET", "/sessions", params=page_params(query, cursor, limit, **filters))

    def session(self, session_id: str) -> R:
        return self.call("GET", f"/sessions/{session_id}")

    def update_session(self, session_id: str, **changes: Any) -> R:
        """PATCH title, pinned, archived or folder_id."""
        return self.call("PATCH", f"/sessions/{session_id}", json=changes)

    def delete_session(self, session_id: str, *, purge: bool = False) -> R:
        """To the trash; with `purge`, gone at once."""
        params = {"purge": "true"} if purge else None
        return self.call("DELETE", f"/sessions/{session_id}", params=params)

    def restore_session(self, session_id: str) -> R:
        return self.call("POST", f"/sessions/{session_id}/restore")

    def fork(self, session_id: str, **body: Any) -> R:
        return self.call("POST", f"/sessions/{session_id}/fork", json=body or None)

    def clear(self, session_id: str) -> R:
        return self.call("POST", f"/sessions/{session_id}/clear")

    def messages(self, session_id: str) -> R:
        """The transcript's messages."""
        return self.call("GET", f"/sessions/{session_id}/messages", pick="items")

    def context(self, session_id: str) -> R:
        """The context gauge's figures: tokens, window, percent."""
        return self.call("GET", f"/sessions/{session_id}/context")

    def like(self, session_id: str, message_id: str) -> R:
        return self.call("POST", f"/sessions/{session_id}/messages/{message_id}/like")

    def unlike(self, session_id: str, message_id: str) -> R:
        return self.call("DELETE", f"/sessions/{session_id}/messages/{message_id}/like")

    def export(self, session_id: str, fmt: str) -> R:
        """The response of a download: `markdown` or `zip`."""
        path = f"/sessions/{session_id}/export"
        return self.call("GET", path, raw=True, params={"format": fmt})

    def import_bundle(self, data: bytes) -> R:
        headers = {"Content-Type": "application/zip"}
        return self.call("POST", "/sessions/import", content=data, headers=headers)

    def note(self, body: dict[str, Any]) -> R:
        """A note a coding agent leaves in a session (made for its working directory)."""
        return self.call("POST", "/notes", json=body)

    # -- folders --

    def folders(self) -> R:
        return self.call("GET", "/folders", pick="items")

    def create_folder(self, **fields: Any) -> R:
        return self.call("POST", "/folders", json=fields)

    def update_folder(self, folder_id: str, **changes: Any) -> R:
        return self.call("PATCH", f"/folders/{folder_id}", json=changes)

    def delete_folder(self, folder_id: str) -> R:
        return self.call("DELETE", f"/folders/{folder_id}")

    def order_folders(self, folder_ids: list[str]) -> R:
        return self.call("PUT", "/folders/order", json={"ids": folder_ids}, pick="items")

    # -- memory --

    def memory(self, kind: str) -> R:
        """A memory file (`identity`, `user`, `agent`): content, chars, limit."""
        return self.call("GET", f"/memory/{kind}")

    def put_memory(self, kind: str, body: dict[str, Any]) -> R:
        return self.call("PUT", f"/memory/{kind}", json=body)

    def write_memory_entry(self, kind: str, body: dict[str, Any]) -> R:
        """One entry added, replaced or removed (`action`), on the API's write path."""
        return self.call("POST", f"/memory/{kind}/entries", json=body)

    def memory_backups(self, kind: str) -> R:
        return self.call("GET", f"/memory/{kind}/backups")

    def restore_memory_backup(self, kind: str, name: str) -> R:
        return self.call("POST", f"/memory/{kind}/backups/{name}/restore")
