"""A team's open tabs and a hostile client's slow requests leave room for everyone else.

`eonyx serve` at its shipped settings (two gevent workers) holds 500 open events sockets, far
more than the 64 threads it had before, or 500 connections trickling a login's body; a
newcomer still signs in, lists, and completes a turn, and an event still reaches exactly the
sockets of the user it is for. The slow connections are answered 408 and closed once their
body's time is up.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager, suppress
from typing import Any, TypeVar

import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect

from tests.cli.serving import PASSWORD, Served, admin_client
from tests.conftest import wait_for
from tests.fake_llm import FakeLLM

pytestmark = pytest.mark.slow

T = TypeVar("T")
CROWD = 20  # users with tabs open
LOGIN_TABS, KEY_TABS = 16, 9  # 25 a user: within the shipped caps (16 a token, 32 a user)
SLOW = 500
SLOW_HEADERS = 100
BODY_SECONDS = 15  # REQUEST_BODY_SECONDS: long enough to chat while they are held


class Loop:
    """An asyncio loop in a thread of its own, holding connections while the test goes on."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float = 60) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


@contextmanager
def event_loop() -> Iterator[Loop]:
    loop = Loop()
    try:
        yield loop
    finally:
        loop.stop()


def serve_with_model(
    start_serve: Callable[..., Served], fake_llm: FakeLLM, **env: str
) -> tuple[Served, str]:
    served = start_serve(EONYX_LLM_BASE_URL=fake_llm.base_url, EONYX_LLM_MODEL="fake-model", **env)
    return served, served.wait_url()


def add_user(admin: httpx.Client, name: str) -> str:
    """A new user's login token."""
    created = admin.post(
        "/api/v1/users", json={"username": name, "password": PASSWORD, "is_admin": False}
    )
    assert created.status_code == 201, created.text
    login = httpx.post(
        f"{admin.base_url}/api/v1/auth/login",
        json={"username": name, "password": PASSWORD},
        timeout=10,
    )
    assert login.status_code == 200, login.text
    return login.json()["token"]


def newcomer_chats(admin: httpx.Client, fake_llm: FakeLLM) -> None:
    """What a person who just arrived does: signs in, lists, starts a chat, gets an answer."""
    token = add_user(admin, f"newcomer{len(fake_llm.completions)}")
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=str(admin.base_url), headers=headers, timeout=10) as http:
        listed = http.get("/api/v1/sessions")
        assert listed.status_code == 200, listed.text
        session = http.post("/api/v1/sessions", json={})
        assert session.status_code == 201, session.text
        asked = len(fake_llm.completions)
        turn = http.post(
            f"/api/v1/sessions/{session.json()['id']}/turns", json={"content": "hello there"}
        )
        assert turn.status_code == 200, turn.text
        assert turn.json()["assistant_message"]["content"]
        assert len(fake_llm.completions) > asked  # the answer came from the model


async def open_tabs(ws_url: str, tokens: list[str], count: int) -> list[ClientConnection]:
    async def tab(token: str) -> ClientConnection:
        socket = await connect(f"{ws_url}?token={token}", open_timeout=30, ping_interval=None)
        assert json.loads(await asyncio.wait_for(socket.recv(), 30)) == {"type": "ready"}
        # Offered compression (as browsers do) is declined: a deflate context per idle tab
        # would triple its memory for events of a few hundred bytes.
        assert socket.response is not None
        assert "Sec-WebSocket-Extensions" not in socket.response.headers
        return socket

    return list(await asyncio.gather(*(tab(token) for token in tokens for _ in range(count))))


async def next_event(sockets: list[ClientConnection]) -> list[dict[str, Any]]:
    return [json.loads(await asyncio.wait_for(s.recv(), 10)) for s in sockets]


async def close_codes(sockets: list[ClientConnection]) -> list[int | None]:
    """Each socket's close code, once the server has closed it."""
    await asyncio.gather(*(asyncio.wait_for(s.wait_closed(), 10) for s in sockets))
    return [s.close_code for s in sockets]


async def close_all(sockets: list[ClientConnection]) -> None:
    await asyncio.gather(*(s.close() for s in sockets), return_exceptions=True)


def test_five_hundred_open_tabs_leave_room_for_a_newcomer_and_events_reach_their_tabs(
    start_serve: Callable[..., Served], fake_llm: FakeLLM
) -> None:
    served, url = serve_with_model(start_serve, fake_llm)
    ws_url = url.replace("http://", "ws://") + "/api/v1/events"
    with admin_client(served, url) as admin, event_loop() as loop:
        logins = [add_user(admin, f"tabs{n}") for n in range(CROWD)]
        keys = []
        for login in logins:
            made = httpx.post(
                f"{url}/api/v1/tokens",
                json={"name": "second browser"},
                headers={"Authorization": f"Bearer {login}"},
                timeout=10,
            )
            assert made.status_code == 201, made.text
            keys.append(made.json()["token"])
        tabs = [
            loop.run(open_tabs(ws_url, [login], LOGIN_TABS))
            + loop.run(open_tabs(ws_url, [key], KEY_TABS))
            for login, key in zip(logins, keys, strict=True)
        ]
        assert sum(len(mine) for mine in tabs) == CROWD * (LOGIN_TABS + KEY_TABS) == 500
        try:
            newcomer_chats(admin, fake_llm)

            # One user's event reaches each of their 25 tabs, and no other user's tab.
            for n in (0, CROWD - 1):
                saved = httpx.put(
                    f"{url}/api/v1/memory/user",
                    json={"content": f"- Tab owner {n}\n"},
                    headers={"Authorization": f"Bearer {logins[n]}"},
                    timeout=10,
                )
                assert saved.status_code == 200, saved.text
            for n in (0, CROWD - 1):
                seen = loop.run(next_event(tabs[n]))
                assert {(e["type"], e["file"]) for e in seen} == {("memory.updated", "USER.md")}
            quiet = [socket for mine in tabs[1:-1] for socket in mine]
            assert not any(loop.run(pending(quiet)))

            # Stopping closes every tab's socket as a restart (1012), so the tabs reconnect,
            # rather than the stop waiting on them and then cutting them off.
            served.stop_with_ctrl_c()
            codes = loop.run(close_codes([socket for mine in tabs for socket in mine]))
            assert codes == [1012] * 500, sorted(set(codes))
        finally:
            loop.run(close_all([socket for mine in tabs for socket in mine]))


async def pending(sockets: list[ClientConnection]) -> list[bool]:
    """Whether each socket has a message waiting (after a moment for one in flight)."""
    await asyncio.sleep(0.5)

    async def waiting(socket: ClientConnection) -> bool:
        try:
            await asyncio.wait_for(socket.recv(), 0.01)
        except TimeoutError:
            return False
        return True

    return list(await asyncio.gather(*(waiting(s) for s in sockets)))


LOGIN_HEAD = (
    "POST /api/v1/auth/login HTTP/1.1\r\nHost: eonyx\r\n"
    "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n"
)


async def trickle(
    host: str, port: int, held: float, connected: list[int], *, head: str = LOGIN_HEAD
) -> bytes | None:
    """Sends `head`, then a byte a second (of the body, or of the headers when `head` is not
    finished); what the server answered when it answered or closed (b"" for a close without
    a word), None when it still held on after `held` seconds.

    A plain socket, read as a browser's is: the server closes with the client's latest
    bytes unread, so a reset follows its answer, and the kernel hands over the answer before
    the reset. (asyncio's streams raise the reset first, dropping what they had buffered.)"""
    loop = asyncio.get_running_loop()
    with socket.socket() as sock:
        sock.setblocking(False)
        await loop.sock_connect(sock, (host, port))
        connected.append(1)
        await loop.sock_sendall(sock, head.encode())
        deadline = loop.time() + held
        while loop.time() < deadline:
            with suppress(ConnectionError):  # closed: what it said is still to be read
                await loop.sock_sendall(sock, b" ")
            try:
                first = await asyncio.wait_for(loop.sock_recv(sock, 4096), 1.0)
            except TimeoutError:
                continue
            except ConnectionError:
                return b""
            return first + await rest_of(sock) if first else first
    return None


async def rest_of(sock: socket.socket) -> bytes:
    """What the server sends up to its close (the answer may come in pieces)."""
    loop, received = asyncio.get_running_loop(), bytearray()
    with suppress(ConnectionError):
        while chunk := await asyncio.wait_for(loop.sock_recv(sock, 4096), 10):
            received += chunk
    return bytes(received)


def test_five_hundred_slow_bodies_leave_room_for_a_newcomer_and_are_cut_off(
    start_serve: Callable[..., Served], fake_llm: FakeLLM
) -> None:
    served, url = serve_with_model(start_serve, fake_llm, REQUEST_BODY_SECONDS=str(BODY_SECONDS))
    host, port = url.removeprefix("http://").split(":")
    slow_head = "GET /healthz HTTP/1.1\r\nHost: eonyx\r\nX-Slow:"  # never finished
    with admin_client(served, url) as admin, event_loop() as loop:
        held, connected = 2 * BODY_SECONDS + 10.0, []

        async def crowd() -> list[bytes | None]:
            bodies = [trickle(host, int(port), held, connected) for _ in range(SLOW)]
            heads = [
                trickle(host, int(port), held, connected, head=slow_head)
                for _ in range(SLOW_HEADERS)
            ]
            return await asyncio.gather(*bodies, *heads)

        slow = asyncio.run_coroutine_threadsafe(crowd(), loop.loop)
        wait_for(lambda: len(connected) == SLOW + SLOW_HEADERS, 30, "the slow connections")
        newcomer_chats(admin, fake_llm)  # while the slow bodies are still coming in
        assert not slow.done()
        answers = slow.result(held + 30)
    statuses = {answer.split(b"\r\n", 1)[0] if answer else answer for answer in answers[:SLOW]}
    # Each was told why and let go once its time was up; none held on for good.
    assert statuses == {b"HTTP/1.1 408 REQUEST TIMEOUT"}
    body = answers[0].split(b"\r\n\r\n", 1)[1]  # type: ignore[union-attr]
    assert json.loads(body)["error"]["code"] == "request_timeout"
    # Headers that never end are cut off too (gunicorn's keep-alive seconds), without a word.
    assert set(answers[SLOW:]) == {b""}
