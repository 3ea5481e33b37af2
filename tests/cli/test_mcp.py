"""`eonyx mcp` driven as coding agents drive it: the `mcp` package's own clients, over stdio
(the command spawned with a token) and over streamable HTTP (`eonyx mcp --http`, the key as a
bearer token), against one live Eonyx server for the module."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from click.testing import CliRunner
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from werkzeug.serving import make_server

from api import create_app
from api.context import runtime_of
from cli import main
from shared.core.release import eonyx_version
from tests.api import websockets
from tests.conftest import (
    Account,
    Backend,
    create_account,
    eonyx_executable,
    free_port,
    make_settings,
    wait_for,
)
from tests.fake_llm import FakeLLM, text
from workers.queue import celery_jobs

pytestmark = pytest.mark.slow
TRANSPORTS = ("stdio", "http", "http-stateless")  # the last as compose runs it
WRITE_TOOLS = {"memory_add", "memory_replace", "memory_remove", "session_note"}


@dataclass
class Served:
    url: str  # the Eonyx API server
    mcp_urls: dict[str, str]  # transport: the URL of `eonyx mcp --http [--stateless]`
    alice: Account
    bob: Account
    full_key: str
    read_key: str  # memory:read and sessions:read only
    found_session: str  # alice's session that says "flamingo"
    bobs_session: str
    workdir: Path

    def api(self, method: str, path: str, token: str, **kwargs: Any) -> Any:
        headers = {"Authorization": f"Bearer {token}"}
        response = httpx.request(method, f"{self.url}/api/v1{path}", headers=headers, **kwargs)
        assert response.status_code < 400, response.text
        return response.json()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, embedded_redis: str) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("mcp")
    llm = FakeLLM().start()
    backend = Backend("embedded", f"sqlite:///{root / 'eonyx.db'}", embedded_redis)
    settings = make_settings(
        root / "data",
        backend,
        EONYX_LLM_BASE_URL=llm.base_url,
        EONYX_LLM_MODEL="fake-model",
        LLM_MAX_RETRIES="0",
    )
    app = create_app(settings, jobs_queue=celery_jobs(settings))
    rt = runtime_of(app)
    rt.db.migrate()
    rt.redis.flushdb()
    alice, bob = create_account(rt, "alice"), create_account(rt, "bob")
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.port}"
    env = {**os.environ, "EONYX_URL": url, "XDG_CONFIG_HOME": str(root / "config")}
    env.pop("EONYX_TOKEN", None)
    processes, mcp_urls = [], {}
    for transport, extra in (("http", []), ("http-stateless", ["--stateless"])):
        port = free_port()
        command = [eonyx_executable(), "mcp", "--http", "--port", str(port), *extra]
        out = subprocess.DEVNULL
        processes.append(subprocess.Popen(command, env=env, stdout=out, stderr=out))
        mcp_urls[transport] = f"http://127.0.0.1:{port}/mcp"
    try:
        for mcp_url in mcp_urls.values():
            health = mcp_url.removesuffix("/mcp") + "/healthz"
            wait_for(lambda url=health: _healthy(url), 60, f"{health} to answer")
        served = Served(url, mcp_urls, alice, bob, "", "", "", "", root)

        def key(*scopes: str) -> str:
            body = {"name": "agent", "scopes": list(scopes)}
            return served.api("POST", "/tokens", alice.token, json=body)["token"]

        served.full_key, served.read_key = key(), key("memory:read", "sessions:read")
        for owner, words in ((alice, "the flamingo deployment"), (bob, "bob's secret plans")):
            session = served.api("POST", "/sessions", owner.token, json={})["id"]
            llm.script(text("Noted."))
            turn = {"content": f"Remember {words}"}
            served.api("POST", f"/sessions/{session}/turns", owner.token, json=turn)
            if owner is alice:
                served.found_session = session
            else:
                served.bobs_session = session
        yield served
    finally:
        for process in processes:
            process.terminate()
            with suppress(subprocess.TimeoutExpired):
                process.wait(10)
            if process.poll() is None:
                process.kill()
        server.shutdown()
        server.server_close()
        thread.join(5)
        rt.close()
        llm.stop()


def _healthy(url: str) -> bool:
    with suppress(httpx.HTTPError):
        return httpx.get(url).status_code == 200
    return False


@asynccontextmanager
async def connect(served: Served, transport: str, token: str) -> AsyncIterator[ClientSession]:
    """An initialized MCP client session with `eonyx mcp` over `transport` as `token`."""
    if transport == "stdio":
        params = StdioServerParameters(
            command=eonyx_executable(),
            args=["mcp"],
            env={"EONYX_URL": served.url, "EONYX_TOKEN": token, "PATH": os.environ["PATH"]},
            cwd=served.workdir,
        )
        async with (
            stdio_client(params, errlog=sys.stderr) as (read, write),
            ClientSession(read, write) as session,
        ):
            await initialized(session)
            yield session
        return
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(served.mcp_urls[transport], http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await initialized(session)
        yield session


async def initialized(session: ClientSession) -> None:
    """The handshake, which names the server and the version it runs."""
    result = await session.initialize()
    assert (result.server_info.name, result.server_info.version) == ("eonyx", eonyx_version())


def call(session: ClientSession, name: str, **arguments: Any) -> Any:
    return session.call_tool(name, arguments)


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_tools_and_resources_are_listed_and_memory_reads(served: Served, transport: str) -> None:
    served.api("PUT", "/memory/user", served.alice.token, json={"content": "- Prefers tabs\n"})

    async def scenario() -> None:
        async with connect(served, transport, served.full_key) as session:
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            assert set(tools) == {
                "memory_read",
                *WRITE_TOOLS,
                "sessions_search",
                "session_read",
            }
            assert tools["memory_read"].input_schema["properties"]["kind"]["enum"] == [
                "user",
                "agent",
            ]
            assert "preferences" in tools["memory_read"].description
            read = await call(session, "memory_read", kind="user")
            assert not read.is_error
            assert text_of(read).startswith("USER.md (")
            assert text_of(read).endswith("- Prefers tabs")
            resources = {str(r.uri): r.name for r in (await session.list_resources()).resources}
            assert resources == {
                "eonyx://memory/user": "USER.md",
                "eonyx://memory/agent": "MEMORY.md",
            }
            profile = await session.read_resource("eonyx://memory/user")
            assert profile.contents[0].text == "- Prefers tabs\n"

    anyio.run(scenario)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_add_is_saved_and_pushed_live_and_a_secret_is_refused(
    served: Served, transport: str
) -> None:
    entry = f"Deploys with make ship ({transport})"
    events = served.url.replace("http://", "ws://") + "/api/v1/events"
    ws = websockets.connect(events, headers={"Authorization": f"Bearer {served.alice.token}"})

    async def scenario() -> None:
        async with connect(served, transport, served.full_key) as session:
            added = await call(session, "memory_add", kind="agent", content=entry)
            assert not added.is_error, text_of(added)
            assert text_of(added).startswith(f"Saved: added {entry!r} to MEMORY.md.")
            secret = await call(
                session,
                "memory_add",
                kind="agent",
                content="the deploy token is ghp_16C7e42F292c6912E7710c838347Ae178B4a",
            )
            assert secret.is_error
            assert text_of(secret) == (
                "Refused: blocked by the safety filter (rule github_token): the text contains "
                "a GitHub token; leave it out."
            )
            bad = await call(session, "memory_add", kind="identity", content="x")
            assert bad.is_error
            assert "the arguments are wrong" in text_of(bad)

    try:
        assert ws.next_json() == {"type": "ready"}
        anyio.run(scenario)
        assert ws.next_json() == {
            "type": "memory.updated",
            "file": "MEMORY.md",
            "action": "added",
            "entry": entry,
        }
    finally:
        ws.hang_up()
    memory = served.api("GET", "/memory/agent", served.alice.token)["content"]
    assert f"- {entry}\n" in memory
    assert "ghp_" not in memory


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_sessions_are_searched_and_read_and_another_users_is_not_found(
    served: Served, transport: str
) -> None:
    async def scenario() -> None:
        async with connect(served, transport, served.read_key) as session:
            found = await call(session, "sessions_search", query="flamingo")
            assert not found.is_error, text_of(found)
            assert f"id {served.found_session}" in text_of(found)
            assert "bob" not in text_of(found)
            read = await call(session, "session_read", id=served.found_session)
            assert text_of(read).endswith(
                "[1] user: Remember the flamingo deployment\n\n[2] assistant: Noted."
            )
            one = await call(session, "session_read", id=served.found_session, start=2, end=2)
            assert "messages 2-2 of 2" in text_of(one)
            assert "flamingo" not in text_of(one).split("\n", 1)[1]
            theirs = await call(session, "session_read", id=served.bobs_session)
            assert theirs.is_error
            assert text_of(theirs) == "Refused: session not found."

    anyio.run(scenario)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_key_without_memory_write_sees_no_write_tools(served: Served, transport: str) -> None:
    async def scenario() -> None:
        async with connect(served, transport, served.read_key) as session:
            names = {tool.name for tool in (await session.list_tools()).tools}
            assert names == {"memory_read", "sessions_search", "session_read"}
            # Called anyway, the API refuses it: nothing is saved.
            refused = await call(session, "memory_add", kind="user", content="Likes vim")
            assert refused.is_error
            assert "'memory:write'" in text_of(refused)

    anyio.run(scenario)
    assert "vim" not in served.api("GET", "/memory/user", served.alice.token)["content"]


def test_notes_land_in_the_working_directory_s_session(served: Served) -> None:
    async def scenario() -> None:
        async with connect(served, "stdio", served.full_key) as session:
            noted = await call(session, "session_note", note="Refactored the cart module")
            assert not noted.is_error, text_of(noted)
            assert "(made for this working directory)" in text_of(noted)

    anyio.run(scenario)
    found = served.api("GET", "/sessions?q=cart", served.alice.token)["items"]
    assert [(s["source"], s["title"]) for s in found] == [("mcp", f"Notes: {served.workdir.name}")]
    messages = served.api("GET", f"/sessions/{found[0]['id']}/messages", served.alice.token)
    assert messages["items"][0]["content"].endswith(": Refactored the cart module")


def test_the_http_endpoint_wants_a_key(served: Served) -> None:
    for url in served.mcp_urls.values():
        response = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "missing_token"


def test_tokens_are_made_with_scopes_listed_and_revoked(served: Served, tmp_path: Path) -> None:
    runner = CliRunner(
        env={
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "EONYX_URL": served.url,
            "EONYX_TOKEN": served.alice.token,
        }
    )
    made = runner.invoke(main, ["tokens", "create", "codex", "--scope", "memory:read"])
    assert made.exit_code == 0, made.output
    key = made.stdout.strip()
    assert key.startswith("eyx_")
    assert "(memory:read); it is not shown again" in made.stderr

    async def scenario() -> None:
        async with connect(served, "stdio", key) as session:
            names = {tool.name for tool in (await session.list_tools()).tools}
            assert names == {"memory_read"}

    anyio.run(scenario)
    listed = runner.invoke(main, ["tokens", "list"])
    line = next(line for line in listed.output.splitlines() if "codex" in line)
    assert "(memory:read; " in line
    token_id = line.split()[0]
    assert runner.invoke(main, ["tokens", "revoke", token_id]).exit_code == 0
    assert "codex" not in runner.invoke(main, ["tokens", "list"]).output

    async def revoked() -> None:
        async with connect(served, "stdio", key) as session:
            with pytest.raises(MCPError, match="invalid, expired or revoked token"):
                await session.list_tools()

    anyio.run(revoked)
    wrong = runner.invoke(main, ["tokens", "create", "x", "--scope", "memory:delete"])
    assert wrong.exit_code == 2
    assert "'memory:delete' is not one of" in wrong.output
