"""`eonyx mcp`: Eonyx's memory and sessions for coding agents, over the Model Context
Protocol (the official `mcp` SDK's low-level server).

On stdio (the default) a coding agent starts it as its MCP server: `claude mcp add eonyx --
eonyx mcp`. With `--http` it serves the streamable-HTTP transport at `/mcp` for remote agents
(the compose file's `mcp` service), each request authenticated by the Eonyx API key it
carries as a bearer token, which the API must accept (cli/mcp_http.py: the key check, the
sessions tied to their key and capped per key).

It is a client of the API like the other client commands: every tool call is one or two
HTTP requests through cli/api_client.py, with the token `eonyx login` saved (or EONYX_URL /
EONYX_TOKEN) on stdio, and the request's own key over HTTP. So every write takes the API's
path (filter, cap, duplicate check, backup, lock, `memory.updated`), every read the API's
ownership rules (another user's session is not found), and the API's rate limits apply. It
never loads the server's stack.

The tools listed are those the key's scopes allow (`GET /tokens/current`); a tool outside
them is not listed, and the API refuses it anyway. The identity is not offered: it stays
read-only and the agent's own instructions are not Eonyx's business.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import httpx
import jsonschema
import mcp.types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from cli.api_client import LIMITS, AsyncApiClient
from cli.api_error import ApiError
from shared.core.messages import content_text, tool_call_parts
from shared.core.registry import SCOPE_MEMORY_READ, SCOPE_MEMORY_WRITE, SCOPE_SESSIONS_READ
from shared.core.release import eonyx_version
from shared.memory import entry

NAME = "eonyx"
SCOPES_TTL = 60.0  # seconds a key's scopes are trusted before asking again
CLIENTS_KEPT = 256  # HTTP: API clients kept, one per API key seen lately
REFUSED_KEPT = 1024  # HTTP: keys the API refused lately (their hashes), not asked again
SEARCH_LIMIT = 10
READ_LIMIT = 50  # messages of a transcript per read, unless a range says otherwise
RESOURCES = {
    "eonyx://memory/user": ("user", "USER.md", "How the user likes to be helped"),
    "eonyx://memory/agent": ("agent", "MEMORY.md", "Facts about the user's work and projects"),
}
INSTRUCTIONS = (
    "Eonyx is the user's long-term memory, shared with their chat assistant and other agents. "
    "USER.md holds how they like to be helped; MEMORY.md holds durable facts about their work. "
    "Read them at the start of a task; save a durable fact or a stated preference as one "
    "short entry when you learn it; search past sessions when the user refers to earlier work."
)


@dataclass(frozen=True)
class ToolSpec:
    scope: str
    description: str
    schema: dict[str, Any]
    read_only: bool


TOOLS: dict[str, ToolSpec] = {
    "memory_read": ToolSpec(
        SCOPE_MEMORY_READ,
        "Read one of the user's memory files, one entry per line: USER.md (kind user) or "
        "MEMORY.md (kind agent). Read them before starting work to follow the user's "
        "preferences and known facts.",
        {"type": "object", "properties": {"kind": entry.KIND}, "required": ["kind"]},
        True,
    ),
    "memory_add": ToolSpec(
        SCOPE_MEMORY_WRITE,
        "Save one new entry: a stated preference of the user (kind user) or a durable fact "
        "about their work worth knowing next time (kind agent). One fact per entry, short, "
        "no secrets or sensitive personal data. Refused with the reason when it duplicates an "
        "entry, the file is full, or the safety filter blocks it.",
        entry.action_schema("add", kind=entry.KIND),
        False,
    ),
    "memory_replace": ToolSpec(
        SCOPE_MEMORY_WRITE,
        "Replace one entry that changed or was wrong with its new text, found by a unique "
        "part of it (old_text). Prefer this to adding a contradicting entry.",
        entry.action_schema("replace", kind=entry.KIND),
        False,
    ),
    "memory_remove": ToolSpec(
        SCOPE_MEMORY_WRITE,
        "Remove one entry that is no longer true, found by a unique part of it (old_text).",
        entry.action_schema("remove", kind=entry.KIND),
        False,
    ),
    "sessions_search": ToolSpec(
        SCOPE_SESSIONS_READ,
        "Search the user's past chat sessions (titles and text) for words; returns the best "
        "matches with their ids and a snippet. Word forms match (`deploy` finds deployment, "
        '`sandwiches` finds sandwich); `"word"` matches that word only. Read a match with '
        "session_read.",
        {
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1, "maxLength": 200},
                "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": SEARCH_LIMIT},
            },
            "required": ["query"],
        },
        True,
    ),
    "session_read": ToolSpec(
        SCOPE_SESSIONS_READ,
        f"Read a session's transcript as text, by its id (from sessions_search). Messages are "
        f"numbered from 1; give start and end for a range (default: the first {READ_LIMIT}).",
        {
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": "The session id."},
                "start": {"type": "integer", "minimum": 1, "description": "First message."},
                "end": {"type": "integer", "minimum": 1, "description": "Last message."},
            },
            "required": ["id"],
        },
        True,
    ),
    "session_note": ToolSpec(
        SCOPE_MEMORY_WRITE,
        "Leave a note in the user's sessions, e.g. what you did and why, for the user and "
        "their assistant to find later. Without session_id it goes to a session of its own "
        "for your working directory (made on the first note); over a remote connection "
        "without workdir, to one for your API key and client.",
        {
            "type": "object",
            "properties": {
                "note": {"type": "string", "minLength": 1},
                "session_id": {"type": "string", "description": "A session to append to."},
                "workdir": {
                    "type": "string",
                    "description": "Your working directory (default: where this server runs).",
                },
            },
            "required": ["note"],
        },
        False,
    ),
}


class Access:
    """One API key's client and what its scopes allow, as the API last said (asked again
    once `ttl` seconds have passed; concurrent askers wait for one answer)."""

    def __init__(self, client: AsyncApiClient, ttl: float) -> None:
        self.client, self.ttl = client, ttl
        self.scopes: frozenset[str] = frozenset()
        self.token_id = ""  # the key's id at the API (`GET /tokens/current`)
        self.checked = float("-inf")
        self.lock = anyio.Lock()

    @property
    def fresh(self) -> bool:
        return time.monotonic() - self.checked <= self.ttl

    async def allowed(self) -> frozenset[str]:
        """The key's scopes; ApiError when the API refuses the key (401) or cannot answer."""
        if self.fresh:
            return self.scopes
        async with self.lock:
            if not self.fresh:
                current = await self.client.current_token()
                self.scopes, self.checked = frozenset(current["scopes"]), time.monotonic()
                self.token_id = str(current.get("id") or "")
        return self.scopes


class Accesses:
    """Where a request's API client comes from: the one saved login (stdio), or the
    request's bearer token (HTTP), an `Access` per recently seen key, found by the key's
    SHA-256 (`key_id`). Over HTTP the clients share one connection pool, and a key the API
    refused is remembered as refused for `ttl` too, so a client repeating a bad key costs
    the API one request per `ttl`, not one per attempt."""

    def __init__(self, url: str, token: str | None = None, *, ttl: float = SCOPES_TTL) -> None:
        self.url, self.ttl = url, ttl
        self.transport = httpx.AsyncHTTPTransport(limits=LIMITS)
        self.fixed = Access(AsyncApiClient(url, token), ttl) if token else None
        self.by_key: OrderedDict[str, Access] = OrderedDict()
        self.refused: OrderedDict[str, tuple[float, ApiError]] = OrderedDict()

    def get(self, token: str) -> Access:
        key = key_id(token)
        found = self.by_key.pop(key, None)
        if found is None:
            found = Access(AsyncApiClient(self.url, token, transport=self.transport), self.ttl)
        self.by_key[key] = found
        while len(self.by_key) > CLIENTS_KEPT:
            self.by_key.popitem(last=False)  # its client shares the pool: nothing to close
        return found

    async def verify(self, token: str) -> Access:
        """The key's Access once the API has accepted it (within `ttl`); the API's ApiError
        otherwise: 401 for a key it does not know, 0 or 5xx when it could not answer."""
        key = key_id(token)
        refused = self.refused.get(key)
        if refused is not None and time.monotonic() - refused[0] <= self.ttl:
            said = refused[1]  # a new error each time: one raised again keeps every traceback
            raise ApiError(said.status, said.code, said.reason, said.hint)
        access = self.get(token)
        try:
            await access.allowed()
        except ApiError as exc:
            if 400 <= exc.status < 500 and exc.status != 429:
                self.refused.pop(key, None)
                self.refused[key] = (time.monotonic(), exc)
                while len(self.refused) > REFUSED_KEPT:
                    self.refused.popitem(last=False)
            self.by_key.pop(key, None)
            raise
        self.refused.pop(key, None)
        return access

    def of(self, ctx: ServerRequestContext[Any, Any]) -> Access:
        if self.fixed is not None:
            return self.fixed
        token = bearer_of(getattr(ctx.request, "headers", None) or {})
        if not token:
            raise ApiError(401, "missing_token", "send 'Authorization: Bearer <Eonyx API key>'")
        return self.get(token)

    async def aclose(self) -> None:
        await self.transport.aclose()


def key_id(token: str) -> str:
    """What a key is known by here (its sessions, its cache entry): never the key itself."""
    return hashlib.sha256(token.encode()).hexdigest()


def bearer_of(headers: Mapping[str, str]) -> str:
    scheme, _, token = (headers.get("authorization") or "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def agent_name(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """The MCP client's name as it introduced itself (`claude-code`), if it did."""
    params = getattr(ctx.session, "client_params", None)
    info = getattr(params, "client_info", None)
    name = getattr(info, "name", None)
    return str(name)[:100] if name else None


# -- what the tools do, through the API -----------------------------------------------------


def usage(file: Mapping[str, Any]) -> str:
    chars, limit = file["chars"], file["limit"]
    return f"{chars * 100 // max(limit, 1)}% — {chars:,}/{limit:,} chars"


async def memory_read(client: AsyncApiClient, args: Mapping[str, Any]) -> str:
    file = await client.memory(args["kind"])
    content = file["content"].strip() or "(no entries yet)"
    return f"{file['name']} ({usage(file)}):\n{content}"


def memory_write(action: str) -> Callable[[AsyncApiClient, Mapping[str, Any]], Awaitable[str]]:
    async def write(client: AsyncApiClient, args: Mapping[str, Any]) -> str:
        body = {"action": action, **{k: v for k, v in args.items() if k != "kind"}}
        saved = await client.write_memory_entry(args["kind"], body)
        return str(saved["message"])

    return write


async def sessions_search(client: AsyncApiClient, args: Mapping[str, Any]) -> str:
    limit = int(args.get("limit") or SEARCH_LIMIT)
    found = (await client.list_sessions(args["query"], limit=limit))["items"]
    if not found:
        return f"No session matches {args['query']!r}."
    lines = [f"{len(found)} session(s) match {args['query']!r}, best first:"]
    for item in found:
        title = item.get("title") or "(untitled)"
        snippet = " ".join(str((item.get("snippet") or {}).get("text") or "").split())
        lines.append(f"- {title} (id {item['id']}, updated {item['updated_at'][:10]}): {snippet}")
    return "\n".join(lines)


async def session_read(client: AsyncApiClient, args: Mapping[str, Any]) -> str:
    session = await client.session(args["id"])
    messages = await client.messages(args["id"])
    start = int(args.get("start") or 1)
    end = int(args.get("end") or start + READ_LIMIT - 1)
    shown = messages[start - 1 : end]
    title = session.get("title") or "(untitled)"
    last = start + len(shown) - 1
    head = f"Session {session['id']}: {title} — messages {start}-{last} of {len(messages)}"
    if not shown:
        return f"{head}\n(no messages in this range)"
    return "\n\n".join([head, *(message_text(start + i, m) for i, m in enumerate(shown))])


def message_text(number: int, message: Mapping[str, Any]) -> str:
    role = message.get("role")
    text = content_text(message.get("content"))
    if role == "assistant" and message.get("tool_calls"):
        calls = [tool_call_parts(call) for call in message["tool_calls"]]
        text = (text + "\n" if text else "") + "\n".join(f"[calls {n}({a})]" for n, a in calls)
    return f"[{number}] {role}: {text}"


async def session_note(
    client: AsyncApiClient,
    args: Mapping[str, Any],
    agent: str | None,
    default_place: str,
    made_for: str,
) -> str:
    """Append the note to `session_id`, or else to the session of `workdir`, or else to
    the session of `default_place` (the notebook this server gives a caller that names none).
    """
    body: dict[str, Any] = {"note": args["note"]}
    if args.get("session_id"):
        body["session_id"] = args["session_id"]
    else:
        body["workdir"] = args.get("workdir") or default_place
    if agent:
        body["agent"] = agent
    noted = await client.note(body)
    session = noted["session"]
    made = f" (made for {made_for})" if noted["created"] else ""
    return f"Noted in session {session['id']} ({session.get('title') or 'untitled'}){made}."


# -- the MCP server ------------------------------------------------------------------------


Handler = Callable[[AsyncApiClient, Mapping[str, Any]], Awaitable[str]]
Tool = Callable[[AsyncApiClient, Mapping[str, Any], ServerRequestContext[Any, Any]], Awaitable[str]]


def client_only(handler: Handler) -> Tool:
    """A tool that needs only the API client and its arguments, not the request."""

    async def call(
        client: AsyncApiClient, args: Mapping[str, Any], ctx: ServerRequestContext[Any, Any]
    ) -> str:
        return await handler(client, args)

    return call


def memory_tools() -> dict[str, Tool]:
    """The memory files: read one, and the entry writes (through the API's write path)."""
    writes = {f"memory_{action}": memory_write(action) for action in ("add", "replace", "remove")}
    return {
        name: client_only(handler)
        for name, handler in {"memory_read": memory_read, **writes}.items()
    }


def session_tools() -> dict[str, Tool]:
    """The past sessions: search them, read one's transcript."""
    return {
        "sessions_search": client_only(sessions_search),
        "session_read": client_only(session_read),
    }


def note_tools(accesses: Accesses, *, stdio: bool) -> dict[str, Tool]:
    """The note: signed with the agent's name; without a session or workdir of its own, on
    stdio in this process's directory, over HTTP in the notebook of its key and client name."""

    async def note(
        client: AsyncApiClient, args: Mapping[str, Any], ctx: ServerRequestContext[Any, Any]
    ) -> str:
        agent = agent_name(ctx)
        if stdio or args.get("workdir"):
            return await session_note(client, args, agent, os.getcwd(), "this working directory")
        place = await http_notebook(accesses.of(ctx), agent)
        return await session_note(client, args, agent, place, "this API key and MCP client")

    return {"session_note": note}


async def http_notebook(access: Access, agent: str | None) -> str:
    """The default notebook of an HTTP caller: one per API key and MCP client name, as stdio
    has one per working directory, which a remote server does not share with its agent. The
    API makes it on the first note and finds it again by this name (the `workdir` it binds),
    so it outlives the MCP session: a client that reconnects writes on in the same one. A
    request without `clientInfo` (a stateless one may have none) goes to the key's unnamed one."""
    await access.allowed()  # the key's id, as the API last said
    return f"{agent or 'MCP client'} (key {access.token_id})"


async def allowed_scopes(accesses: Accesses, ctx: ServerRequestContext[Any, Any]) -> frozenset[str]:
    """What the key may do; an MCP error saying why when the API refuses the key."""
    try:
        return await accesses.of(ctx).allowed()
    except ApiError as exc:
        raise MCPError(types.INVALID_REQUEST, exc.reason) from None


def tool_of(name: str, spec: ToolSpec) -> types.Tool:
    annotations = types.ToolAnnotations(read_only_hint=spec.read_only, destructive_hint=False)
    return types.Tool(
        name=name, description=spec.description, input_schema=spec.schema, annotations=annotations
    )


@dataclass(frozen=True)
class Tools:
    """The server's tools: those of TOOLS the key's scopes allow, each run by its `Tool`."""

    accesses: Accesses
    run: Mapping[str, Tool]

    async def list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        allowed = await allowed_scopes(self.accesses, ctx)
        return types.ListToolsResult(
            tools=[tool_of(name, spec) for name, spec in TOOLS.items() if spec.scope in allowed]
        )

    async def call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        spec = TOOLS.get(params.name)
        args = params.arguments or {}
        try:
            if spec is None:
                raise ApiError(404, "unknown_tool", f"there is no tool {params.name!r}")
            jsonschema.validate(args, spec.schema)
            text = await self.run[params.name](self.accesses.of(ctx).client, args, ctx)
        except jsonschema.ValidationError as exc:
            return refused(f"the arguments are wrong: {exc.message}")
        except ApiError as exc:
            return refused(exc.reason)
        return types.CallToolResult(content=[types.TextContent(text=text)])


@dataclass(frozen=True)
class MemoryResources:
    """USER.md and MEMORY.md as resources (RESOURCES), for a key that may read memory."""

    accesses: Accesses

    async def list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        if SCOPE_MEMORY_READ not in await allowed_scopes(self.accesses, ctx):
            return types.ListResourcesResult(resources=[])
        return types.ListResourcesResult(
            resources=[
                types.Resource(uri=uri, name=name, description=what, mime_type="text/markdown")
                for uri, (_, name, what) in RESOURCES.items()
            ]
        )

    async def read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        if uri not in RESOURCES:
            known = ", ".join(RESOURCES)
            raise MCPError(types.INVALID_PARAMS, f"no resource {uri!r}; there are {known}")
        try:
            file = await self.accesses.of(ctx).client.memory(RESOURCES[uri][0])
        except ApiError as exc:
            raise MCPError(types.INVALID_REQUEST, exc.reason) from None
        return types.ReadResourceResult(
            contents=[
                types.TextResourceContents(uri=uri, mime_type="text/markdown", text=file["content"])
            ]
        )


def build_server(accesses: Accesses, *, stdio: bool) -> Server[Any]:
    tools = Tools(
        accesses, {**memory_tools(), **session_tools(), **note_tools(accesses, stdio=stdio)}
    )
    resources = MemoryResources(accesses)
    return Server(
        NAME,
        version=eonyx_version(),
        instructions=INSTRUCTIONS,
        on_list_tools=tools.list_tools,
        on_call_tool=tools.call_tool,
        on_list_resources=resources.list_resources,
        on_read_resource=resources.read_resource,
    )


def refused(reason: str) -> types.CallToolResult:
    """A refusal as the agent reads it: one sentence, nothing saved."""
    sentence = reason.rstrip(".") + "."
    return types.CallToolResult(
        content=[types.TextContent(text=f"Refused: {sentence}")], is_error=True
    )
