"""A coding agent's tool call through `eonyx mcp`: the latency of `memory_read`, over stdio
and over streamable HTTP, p50 over 200 calls each.

    .venv/bin/python bench/bench_mcp.py [--calls 200] [--database-url URL]

The real processes a deployment runs: `eonyx serve` (gunicorn, a worker, embedded Redis) on a
temporary DATA_DIR and database, one user with a MEMORY.md of 40 entries and an API key made
without scopes; then, as a coding agent does, the `mcp` package's own client talks to
`eonyx mcp` spawned on stdio (EONYX_URL/EONYX_TOKEN) and to `eonyx mcp --http` (the key as
bearer token; stateful, and `--stateless` as the compose file runs it). Each transport gets
one session (initialize, list_tools), 20 calls to warm up, then --calls `memory_read` calls
one after another, each timed from the client's call to its result (which carries the file).
A call is one hop to `eonyx mcp` and one API request (`GET /api/v1/memory/agent`).

Target: p50 under 20 ms for each transport on this machine.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from _common import base_parser, ms, percentile, print_header, print_table, verdict, workspace
from _serve import eonyx_command, eonyx_serve, free_port, http_server, serve_env

from shared.accounts import people
from shared.core.settings import load_settings
from shared.db.database import Database
from shared.memory.files import AGENT_MEMORY, MemoryStore, render_entries

TARGET_MS = 20.0
WARM_UP = 20
ENTRIES = 40


def seed(database_url: str, data_dir: str) -> str:
    """A user with a MEMORY.md of ENTRIES entries; their API key (full access)."""
    settings = load_settings({"DATA_DIR": data_dir, "DATABASE_URL": database_url})
    db = Database(database_url)
    with db.session() as session:
        user = people.create_user(session, "benchmcp", "correct horse battery")
        principal = people.Principal(user.id, user.username, False, "web", "")
        _, key = people.create_api_key(session, principal, "bench")
        user_id = user.id
    db.dispose()
    path = MemoryStore(settings, locks=None).path(AGENT_MEMORY, user_id)  # type: ignore[arg-type]
    path.parent.mkdir(parents=True, exist_ok=True)
    facts = [
        f"Project {n} builds with `make build-{n}`, deploys on Fridays" for n in range(ENTRIES)
    ]
    path.write_text(render_entries(facts), encoding="utf-8")
    return key


@asynccontextmanager
async def session_over(transport: str, url: str, key: str) -> AsyncIterator[Any]:
    import httpx2
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from mcp.client.streamable_http import streamable_http_client

    if transport == "stdio":
        env = {"EONYX_URL": url, "EONYX_TOKEN": key, "PATH": os.environ["PATH"]}
        params = StdioServerParameters(command=eonyx_command()[0], args=["mcp"], env=env)
        async with (
            stdio_client(params, errlog=sys.stderr) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session
        return
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def timed_reads(transport: str, url: str, key: str, calls: int) -> list[int]:
    samples: list[int] = []
    async with session_over(transport, url, key) as session:
        tools = {tool.name for tool in (await session.list_tools()).tools}
        if "memory_read" not in tools:
            raise SystemExit(f"{transport}: memory_read is not listed ({sorted(tools)})")
        for number in range(WARM_UP + calls):
            started = time.perf_counter_ns()
            result = await session.call_tool("memory_read", {"kind": "agent"})
            elapsed = time.perf_counter_ns() - started
            if result.is_error or "deploys on Fridays" not in result.content[0].text:
                raise SystemExit(f"{transport}: memory_read failed: {result.content}")
            if number >= WARM_UP:
                samples.append(elapsed)
    return samples


def main() -> int:
    parser = base_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()

    import anyio

    with workspace(args.database_url, keep=args.keep) as ws:
        print_header("bench_mcp", ws, f"{args.calls} memory_read calls per transport")
        key = seed(ws.database_url, str(ws.data_dir))
        env = {"DATA_DIR": str(ws.data_dir), "DATABASE_URL": ws.database_url, "HOME": str(ws.root)}
        results: dict[str, list[int]] = {}
        with eonyx_serve(env, log=ws.root / "serve.log") as server:
            results["stdio"] = anyio.run(timed_reads, "stdio", server.url, key, args.calls)
            client_env = serve_env({"EONYX_URL": server.url})
            for name, extra in (("http", []), ("http --stateless", ["--stateless"])):
                port = free_port()
                command = [*eonyx_command(), "mcp", "--http", "--port", str(port), *extra]
                log = ws.root / f"mcp-{port}.log"
                with http_server("eonyx mcp --http", command, client_env, port, log=log) as mcp:
                    url = f"{mcp.url}/mcp"
                    results[name] = anyio.run(timed_reads, "http", url, key, args.calls)
    rows = [
        [
            name,
            str(len(samples)),
            ms(percentile(samples, 50)),
            ms(percentile(samples, 90)),
            ms(percentile(samples, 99)),
        ]
        for name, samples in results.items()
    ]
    print_table(["transport", "calls", "p50 ms", "p90 ms", "p99 ms"], rows)
    return verdict(
        [
            (
                f"{name}: p50 {ms(percentile(samples, 50))} ms < {TARGET_MS:g} ms",
                percentile(samples, 50) < TARGET_MS * 1_000_000,
            )
            for name, samples in results.items()
        ]
    )


if __name__ == "__main__":
    raise SystemExit(main())
