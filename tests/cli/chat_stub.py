"""A stand-in for `AsyncApiClient` with fixed sessions and a fixed transcript, for screens that must
look the same on every run (the SVG snapshots and the README's screenshot). Behaviour is
tested against a live server in test_chat.py; this only feeds pictures."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx

from cli.api_client import AsyncApiClient
from cli.stream import Event

SESSIONS = [
    {
        "id": "20260704T080000-0a1b2c3d",
        "title": "Release checklist",
        "source": "web",
        "pinned": True,
        "message_count": 12,
        "updated_at": "2026-07-04T08:30:00+00:00",
    },
    {
        "id": "20260705T091500-1a2b3c4d",
        "title": "Billing: integer cents",
        "source": "web",
        "pinned": False,
        "message_count": 6,
        "updated_at": "2026-07-05T09:42:00+00:00",
    },
    {
        "id": "20260703T140000-2b3c4d5e",
        "title": "Nightly report",
        "source": "api",
        "pinned": False,
        "message_count": 4,
        "updated_at": "2026-07-03T14:05:00+00:00",
    },
    {
        "id": "20260702T101000-3c4d5e6f",
        "title": None,
        "title_pending": True,
        "source": "teams",
        "pinned": False,
        "message_count": 2,
        "updated_at": "2026-07-02T10:11:00+00:00",
    },
]
ANSWER = """Store amounts as **integer cents** and convert only at the edges:

```python
def to_cents(amount: str) -> int:
    units, _, cents = amount.partition(".")
    return int(units) * 100 + int(cents.ljust(2, "0")[:2])
```

`services/billing/AGENTS.md` asks for this, and `round()` on floats would drift."""
MESSAGES = [
    {"id": "m1", "role": "user", "content": "How should I store prices in the billing service?"},
    {
        "id": "m2",
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {
                    "name": "manage_memory",
                    "arguments": '{"action": "add", "content": "Billing uses integer cents"}',
                },
            }
        ],
    },
    {
        "id": "m3",
        "role": "tool",
        "tool_call_id": "call_1",
        "name": "manage_memory",
        "content": "Saved: added 'Billing uses integer cents' to MEMORY.md.",
    },
    {"id": "m4", "role": "assistant", "content": ANSWER, "like": {"status": "saved"}},
]


class StubAPI(AsyncApiClient):
    def __init__(self) -> None:
        super().__init__("http://stub.invalid", "token")

    async def list_sessions(
        self, query: str | None = None, cursor: str | None = None, limit: int = 50
    ) -> dict[str, Any]:
        items = [s for s in SESSIONS if not query or query.lower() in (s["title"] or "").lower()]
        return {"items": [self._item(s) for s in items], "next_cursor": None}

    async def session(self, session_id: str) -> dict[str, Any]:
        return next(self._item(s) for s in SESSIONS if s["id"] == session_id)

    async def messages(self, session_id: str) -> list[dict[str, Any]]:
        return MESSAGES

    async def context(self, session_id: str) -> dict[str, Any]:
        return {"tokens": 6592, "window": 8000, "percent": 82.4}

    async def stream_turn(self, session_id: str, body: dict[str, Any]) -> AsyncIterator[Event]:
        """The server is down: the picture of what a person sees then."""
        raise self.unreachable(httpx.ConnectError("[Errno 111] Connection refused"))
        yield  # pragma: no cover

    @staticmethod
    def _item(session: dict[str, Any]) -> dict[str, Any]:
        defaults = {"title_pending": False, "archived": False, "folder_id": None}
        return {**defaults, "image_count": 0, "created_at": session["updated_at"], **session}
