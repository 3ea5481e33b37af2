"""MCP Inspector's CLI (tests/programs.py's pinned version) against `eonyx mcp`, as a server's
user checks it: over stdio (the command with --url and --token, started by the inspector)
and over streamable HTTP (`eonyx mcp --http`, stateful and stateless, the key as a bearer
token), against test_mcp.py's live server. Every tool is listed with a schema that passes the
inspector's strict check; memory_read and session_note answer when given only their required
arguments (over HTTP too, where no working directory names a session: issue 41, item 5);
the handshake names Eonyx and the package's version."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from shared.core.release import eonyx_version
from tests import programs
from tests.cli.test_mcp import TRANSPORTS, WRITE_TOOLS, Served
from tests.cli.test_mcp import served as served  # the fixture: this module's live server
from tests.conftest import eonyx_executable

pytestmark = pytest.mark.slow
TIMEOUT = 60  # seconds for one run of the inspector
TOOLS = {"memory_read", *WRITE_TOOLS, "sessions_search", "session_read"}
REMEMBERED = "Reviews pull requests before lunch"
NOTED = re.compile(r"^Noted in session (\S+) ")


def target(served: Served, transport: str, workdir: Path) -> list[str]:
    """The server as the inspector is told of it: a command, or a URL and its header."""
    if transport == "stdio":
        command = [eonyx_executable(), "mcp", "--url", served.url, "--token", served.full_key]
        return [*command, "--cwd", str(workdir)]
    return [served.mcp_urls[transport], "--header", f"Authorization: Bearer {served.full_key}"]


def inspect(served: Served, transport: str, tmp_path: Path, *args: str) -> Any:
    """`mcp-inspector --cli <server> <args> --format json`, which must exit 0 (1 on a
    failed call, 6 when the strict schema check finds an error): its result."""
    inspector = programs.ensure(programs.MCP_INSPECTOR)
    command = [str(inspector), "--cli", *target(served, transport, tmp_path), *args,
               "--format", "json"]  # fmt: skip
    done = subprocess.run(
        command,
        cwd=tmp_path,
        env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)},  # its catalogue stays here
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    shown = f"exit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert done.returncode == 0, shown
    assert not done.stderr.strip(), shown  # no schema problems, no warnings
    return json.loads(done.stdout)["result"]


def text_of(result: dict[str, Any]) -> str:
    assert not result["isError"], result
    return "\n".join(block["text"] for block in result["content"])


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_every_tool_is_listed_with_a_schema_that_passes_the_strict_check(
    served: Served, transport: str, tmp_path: Path
) -> None:
    listed = inspect(served, transport, tmp_path, "--method", "tools/list", "--strict")
    tools = {tool["name"]: tool for tool in listed["tools"]}
    assert set(tools) == TOOLS
    for name, tool in tools.items():
        schema = tool["inputSchema"]
        assert schema["type"] == "object", name
        assert set(schema["required"]) <= set(schema["properties"]), name
        assert tool["description"], name
    assert tools["memory_read"]["inputSchema"]["required"] == ["kind"]
    assert tools["session_note"]["inputSchema"]["required"] == ["note"]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_memory_read_and_session_note_answer_with_their_required_arguments_alone(
    served: Served, transport: str, tmp_path: Path
) -> None:
    served.api("PUT", "/memory/user", served.alice.token, json={"content": f"- {REMEMBERED}\n"})
    call = ("--method", "tools/call", "--tool-name")

    read = inspect(served, transport, tmp_path, *call, "memory_read", "--tool-arg", "kind=user")
    assert text_of(read).startswith("USER.md (")
    assert text_of(read).endswith(f"- {REMEMBERED}")

    note = f"Checked the server over {transport} with the inspector"
    noted = inspect(
        served, transport, tmp_path, *call, "session_note", "--tool-arg", f"note={note}"
    )
    found = NOTED.match(text_of(noted))
    assert found, text_of(noted)
    messages = served.api("GET", f"/sessions/{found[1]}/messages", served.alice.token)["items"]
    assert messages[-1]["content"].endswith(f": {note}")


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_handshake_names_eonyx_and_the_package_version(
    served: Served, transport: str, tmp_path: Path
) -> None:
    started = inspect(served, transport, tmp_path, "--method", "initialize")
    assert started["serverInfo"] == {"name": "eonyx", "version": eonyx_version()}
    assert "tools" in started["capabilities"]
