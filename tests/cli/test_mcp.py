"""`eonyx mcp` driven as coding agents drive it: the `mcp` package's own clients, over stdio
(the command spawned with a token) and over streamable HTTP (`eonyx mcp --http`, the key as a
bearer token), against one live Eonyx server for the module."""

from __future__ import annotations

import json
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
import mcp.types as types
import pytest
from click.testing import CliRunner
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from werkzeug.serving import make_server

from api.app import create_app
from api.context import runtime_of
from cli.command import main
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


@asynccontextmanager
async def named_client(served: Served, name: str) -> AsyncIterator[ClientSession]:
    """A stateful HTTP session with the full key, introduced as the MCP client `name`."""
    headers = {"Authorization": f"Bearer {served.full_key}"}
    info = types.Implementation(name=name, version="1")
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(served.mcp_urls["http"], http_client=http) as (read, write),
        ClientSession(read, write, client_info=info) as session,
    ):
        await initialized(session)
        yield session


def test_http_notes_without_a_place_land_in_one_session_per_key_and_client(
    served: Served,
) -> None:
    async def note(client: str, words: str) -> str:
        async with named_client(served, client) as session:
            noted = await call(session, "session_note", note=words)
            assert not noted.is_error, text_of(noted)
            return text_of(noted)

    async def scenario() -> list[str]:
        return [
            await note("agent-one", "Migrated the pelican schema"),
            await note("agent-one", "Pelican schema migration verified"),
            await note("agent-two", "Pelican dashboards drafted"),
        ]

    first, again, other = anyio.run(scenario)
    assert "(made for this API key and MCP client)" in first
    assert "(made for" not in again
    assert "(made for" in other
    found = served.api("GET", "/sessions?q=pelican", served.alice.token)["items"]
    counts: dict[str, int] = {}
    for session in found:
        messages = served.api("GET", f"/sessions/{session['id']}/messages", served.alice.token)
        counts[session["title"]] = len(messages["items"])
    assert {s["source"] for s in found} == {"mcp"}
    assert sorted(counts.values()) == [1, 2]
    assert all(title.startswith(("Notes: agent-one", "Notes: agent-two")) for title in counts)


def stdio_params(served: Served, config: Path, *args: str, **env: str) -> StdioServerParameters:
    """`eonyx mcp` as an agent starts it: a bare environment, no EONYX_* variables unless
    given in `env`."""
    return StdioServerParameters(
        command=eonyx_executable(),
        args=["mcp", *args],
        env={"PATH": os.environ["PATH"], "XDG_CONFIG_HOME": str(config), **env},
        cwd=served.workdir,
    )


async def reads_memory(params: StdioServerParameters) -> str:
    async with (
        stdio_client(params, errlog=sys.stderr) as (read, write),
        ClientSession(read, write) as session,
    ):
        await initialized(session)
        result = await call(session, "memory_read", kind="user")
        assert not result.is_error, text_of(result)
        return text_of(result)


def test_stdio_takes_its_server_and_key_from_flags_or_the_saved_login(
    served: Served, tmp_path: Path
) -> None:
    empty, saved = tmp_path / "empty", tmp_path / "saved"
    (saved / "eonyx").mkdir(parents=True)
    login = {"url": served.url, "token": served.full_key}
    (saved / "eonyx" / "config.json").write_text(json.dumps(login))
    flags = stdio_params(served, empty, "--url", served.url, "--token", served.full_key)

    assert anyio.run(reads_memory, flags).startswith("USER.md")
    assert anyio.run(reads_memory, stdio_params(served, saved)).startswith("USER.md")


def test_stdio_prefers_flags_then_the_environment_then_the_saved_login(
    served: Served, tmp_path: Path
) -> None:
    (tmp_path / "eonyx").mkdir()
    stale = {"url": f"http://127.0.0.1:{free_port()}", "token": "eyx_stale"}
    (tmp_path / "eonyx" / "config.json").write_text(json.dumps(stale))
    key = served.full_key
    environment = stdio_params(served, tmp_path, EONYX_URL=served.url, EONYX_TOKEN=key)
    wrong = {"EONYX_URL": stale["url"], "EONYX_TOKEN": "eyx_wrong"}
    flags = stdio_params(served, tmp_path, "--url", served.url, "--token", key, **wrong)

    assert anyio.run(reads_memory, environment).startswith("USER.md")
    assert anyio.run(reads_memory, flags).startswith("USER.md")


def test_the_http_endpoint_wants_a_key(served: Served) -> None:
    for url in served.mcp_urls.values():
        response = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert response.status_code == 401
        assert response.json()["error"]["data"]["code"] == "missing_token"


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


# -- who may use MCP over HTTP (issue 38) ----------------------------------------------------

PER_KEY = 2  # MCP_SESSIONS_PER_KEY of the guarded servers
KEY_CHECK = 1.0  # MCP_KEY_CHECK_SECONDS of the guarded servers
GUARDED = ("http", "http-stateless")
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}
# Where an MCP client that believes in OAuth looks for an authorization server.
OAUTH_PATHS = (
    "/.well-known/oauth-protected-resource",
    "/.well-known/oauth-protected-resource/mcp",
    "/.well-known/oauth-authorization-server",
    "/.well-known/openid-configuration",
    "/authorize",
    "/token",
    "/register",
)


@dataclass
class Guarded:
    urls: dict[str, str]  # transport: `eonyx mcp --http [--stateless]` with the small limits
    unreachable: str  # `eonyx mcp --http` for an API that does not answer


@pytest.fixture(scope="module")
def guarded(served: Served) -> Iterator[Guarded]:
    """`eonyx mcp --http` and `--http --stateless` with PER_KEY sessions a key and keys
    trusted for KEY_CHECK seconds, and one whose API is a closed port."""
    env = {
        **os.environ,
        "EONYX_URL": served.url,
        "XDG_CONFIG_HOME": str(served.workdir / "config"),
        "MCP_SESSIONS_PER_KEY": str(PER_KEY),
        "MCP_KEY_CHECK_SECONDS": str(KEY_CHECK),
    }
    env.pop("EONYX_TOKEN", None)
    dead_api = {**env, "EONYX_URL": f"http://127.0.0.1:{free_port()}"}
    processes, urls = [], {}
    for name, extra, environ in (
        ("http", [], env),
        ("http-stateless", ["--stateless"], env),
        ("unreachable", [], dead_api),
    ):
        port = free_port()
        command = [eonyx_executable(), "mcp", "--http", "--port", str(port), *extra]
        out = subprocess.DEVNULL
        processes.append(subprocess.Popen(command, env=environ, stdout=out, stderr=out))
        urls[name] = f"http://127.0.0.1:{port}/mcp"
    try:
        for mcp_url in urls.values():
            health = mcp_url.removesuffix("/mcp") + "/healthz"
            wait_for(lambda url=health: _healthy(url), 60, f"{health} to answer")
        unreachable = urls.pop("unreachable")
        yield Guarded(urls, unreachable)
    finally:
        for process in processes:
            process.terminate()
            with suppress(subprocess.TimeoutExpired):
                process.wait(10)
            if process.poll() is None:
                process.kill()


def new_key(served: Served, name: str) -> tuple[str, str]:
    """(id, key) of a fresh full-access key of alice's."""
    made = served.api("POST", "/tokens", served.alice.token, json={"name": name, "scopes": []})
    return made["id"], made["token"]


def initialize(url: str, token: str | None, session_id: str | None = None) -> httpx.Response:
    """An `initialize` as an MCP client posts it, with `token` as the bearer if any."""
    headers = dict(MCP_HEADERS)
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    if session_id is not None:
        headers["Mcp-Session-Id"] = session_id
    return httpx.post(url, json=INITIALIZE, headers=headers, timeout=30)


def end_session(url: str, token: str, session_id: str) -> None:
    headers = {"Authorization": f"Bearer {token}", "Mcp-Session-Id": session_id}
    assert httpx.delete(url, headers=headers).status_code == 200


@asynccontextmanager
async def client_of(url: str, token: str) -> AsyncIterator[tuple[ClientSession, Any]]:
    """The `mcp` package's client on `url` as `token`, not yet initialized, and its HTTP
    client (whose headers a test may change between requests)."""
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        yield session, http


def challenge_of(response: httpx.Response) -> str:
    """The 401's WWW-Authenticate, checked for what MCP clients read in it."""
    assert response.status_code == 401, response.text
    challenge = response.headers["WWW-Authenticate"]
    assert challenge.startswith('Bearer realm="eonyx", error="invalid_token", error_description="')
    assert "resource_metadata" not in challenge  # no OAuth discovery for static keys
    assert "mcp-session-id" not in response.headers
    return challenge


@pytest.mark.parametrize("transport", GUARDED)
def test_a_bad_or_missing_key_gets_401_with_a_bearer_challenge_and_no_session(
    served: Served, guarded: Guarded, transport: str
) -> None:
    url = guarded.urls[transport]
    bad = initialize(url, "not-an-eonyx-key")
    assert "invalid, expired or revoked token" in challenge_of(bad)
    assert bad.json()["error"]["data"]["code"] == "invalid_token"
    assert bad.json()["error"]["message"] == (
        "the Eonyx API refused this key: invalid, expired or revoked token"
    )
    missing = initialize(url, None)
    assert "send an Eonyx API key: 'Authorization: Bearer eyx_...'" in challenge_of(missing)
    assert missing.json()["error"]["data"]["code"] == "missing_token"
    root = url.removesuffix("/mcp")
    for path in OAUTH_PATHS:
        assert httpx.get(root + path).status_code == 404, path
        assert httpx.post(root + path).status_code == 404, path

    async def with_the_client() -> None:
        async with client_of(url, "not-an-eonyx-key") as (session, _):
            with pytest.raises(MCPError, match="the Eonyx API refused this key"):
                await session.initialize()
        async with client_of(url, served.full_key) as (session, _):
            await initialized(session)
            assert (await call(session, "memory_read", kind="agent")).is_error is False

    anyio.run(with_the_client)


def test_an_unreachable_api_is_503_not_401(served: Served, guarded: Guarded) -> None:
    response = initialize(guarded.unreachable, served.full_key)
    assert response.status_code == 503
    assert response.headers["Retry-After"] == "5"
    assert "mcp-session-id" not in response.headers
    error = response.json()["error"]
    assert error["data"]["code"] == "api_unavailable"
    assert error["message"].startswith(
        "the key could not be checked (cannot reach Eonyx at http://127.0.0.1:"
    )
    assert error["message"].endswith("); try again shortly")


def test_a_session_answers_only_the_key_that_opened_it(served: Served, guarded: Guarded) -> None:
    url = guarded.urls["http"]

    async def scenario() -> None:
        async with client_of(url, served.full_key) as (session, http):
            await initialized(session)
            assert (await session.list_tools()).tools
            http.headers["Authorization"] = f"Bearer {served.bob.token}"  # valid, not alice's
            with pytest.raises(MCPError, match="Session not found"):
                await session.list_tools()
            with pytest.raises(MCPError, match="Session not found"):
                await call(session, "sessions_search", query="secret")
            http.headers["Authorization"] = f"Bearer {served.full_key}"
            assert (await session.list_tools()).tools  # the session is still alice's

    anyio.run(scenario)


def test_a_key_holds_at_most_its_share_of_sessions(served: Served, guarded: Guarded) -> None:
    url = guarded.urls["http"]
    _, key = new_key(served, "busy agent")
    opened = []
    for _ in range(PER_KEY):
        response = initialize(url, key)
        assert response.status_code == 200, response.text
        opened.append(response.headers["mcp-session-id"])
    refused = initialize(url, key)
    assert refused.status_code == 429
    assert "mcp-session-id" not in refused.headers
    assert refused.json()["error"]["data"]["code"] == "too_many_sessions"
    assert refused.json()["error"]["message"].startswith(
        f"this API key already has {PER_KEY} open MCP sessions, the most one key may hold "
        "(MCP_SESSIONS_PER_KEY)"
    )

    async def full_then_room() -> None:
        async with client_of(url, key) as (session, _):
            with pytest.raises(MCPError, match="MCP_SESSIONS_PER_KEY"):
                await session.initialize()
        async with client_of(url, served.full_key) as (session, _):
            await initialized(session)  # another key is not held up

    anyio.run(full_then_room)
    end_session(url, key, opened.pop())
    again = initialize(url, key)
    assert again.status_code == 200, again.text
    for session_id in [*opened, again.headers["mcp-session-id"]]:
        end_session(url, key, session_id)


@pytest.mark.parametrize("transport", GUARDED)
def test_a_revoked_key_stops_within_the_key_check_time(
    served: Served, guarded: Guarded, transport: str
) -> None:
    url = guarded.urls[transport]
    token_id, key = new_key(served, f"revoked {transport}")

    async def scenario() -> str:
        async with client_of(url, key) as (session, _):
            await initialized(session)
            assert (await session.list_tools()).tools  # the key is trusted from here on
            revoking = httpx.delete(
                f"{served.url}/api/v1/tokens/{token_id}", headers=served.alice.headers
            )
            assert revoking.status_code == 204
            # Once the key check time has passed since the key was last checked (before the
            # revocation), the very next call is refused: no loop, no clock read.
            await anyio.sleep(KEY_CHECK + 0.1)
            with pytest.raises(MCPError) as refused:
                await session.list_tools()
            return str(refused.value)

    refusal = anyio.run(scenario)
    assert "refused this key: invalid, expired or revoked token" in refusal
    assert "invalid, expired or revoked token" in challenge_of(initialize(url, key))


@pytest.mark.parametrize("transport", GUARDED)
def test_a_flood_of_bad_keys_leaves_a_valid_key_its_session(
    served: Served, guarded: Guarded, transport: str
) -> None:
    """The probe's flood: the same bad key many times and many different ones; none gets a
    session, and a valid key's `initialize` still does."""
    url = guarded.urls[transport]
    bad_keys = ["not-an-eonyx-key"] * 300 + [f"eyx_guess{n:04d}" for n in range(100)]

    async def scenario() -> list[int]:
        statuses: list[int] = []
        limit = anyio.Semaphore(32)
        async with httpx.AsyncClient(timeout=30) as http:

            async def attempt(key: str) -> None:
                async with limit:
                    headers = {**MCP_HEADERS, "Authorization": f"Bearer {key}"}
                    response = await http.post(url, json=INITIALIZE, headers=headers)
                    assert "mcp-session-id" not in response.headers
                    statuses.append(response.status_code)

            async with anyio.create_task_group() as group:
                for key in bad_keys:
                    group.start_soon(attempt, key)
        async with client_of(url, served.full_key) as (session, _):
            await initialized(session)
            assert (await session.list_tools()).tools
        return statuses

    statuses = anyio.run(scenario)
    assert statuses == [401] * len(bad_keys)
