"""Codex CLI (tests/programs.py's pinned version) run as its users run it against Eonyx: a
custom model provider on the Responses wire pointed at the facade, and `eonyx mcp` as its MCP
server, in a CODEX_HOME of the test's own with update checks and analytics off. The model
behind Eonyx is the fake one on loopback; it calls the tool the prompt names, so Codex runs
Eonyx's `memory_read` (or `memory_add`) over MCP and sends the result back through the
facade (issue 41)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests import programs
from tests.api.conftest import Facade, make_facade  # noqa: F401  (make_facade is a fixture)
from tests.conftest import eonyx_executable

# The embedded backend only: what is under test is the wire between Codex and Eonyx, and each
# run of Codex costs seconds; the facade's storage is covered on both backends elsewhere.
pytestmark = [pytest.mark.slow, pytest.mark.parametrize("backend", ["embedded"], indirect=True)]
TIMEOUT = 60  # seconds for one `codex exec`
KEY_VARIABLE = "EONYX_API_KEY"
REMEMBERED = "Keeps the lighthouse logbook in Norwegian"  # only Eonyx's memory holds it
ASK = "Call mcp__eonyx__memory_read with kind: user"
CODEX_PROMPT = "You are a coding agent running in the Codex CLI"
SESSION_ID = re.compile(r"^session id: (\S+)$", re.MULTILINE)


def config_toml(eonyx: Facade) -> str:
    """A user's ~/.codex/config.toml for Eonyx: the facade as the model provider (its key read
    from KEY_VARIABLE), `eonyx mcp` with its server and key as flags, nothing that phones
    home. `required` makes Codex wait for the MCP server before its first request; memory_add
    is approved (Codex asks before any MCP tool that is not read-only, and `exec` cannot ask)."""
    mcp_args = ["mcp", "--url", eonyx.url, "--token", eonyx.user.token]
    return f"""\
model = "default"
model_provider = "eonyx"
check_for_update_on_startup = false

[analytics]
enabled = false

[model_providers.eonyx]
name = "Eonyx"
base_url = "{eonyx.url}/v1"
env_key = "{KEY_VARIABLE}"
wire_api = "responses"

[mcp_servers.eonyx]
command = {json.dumps(eonyx_executable())}
args = {json.dumps(mcp_args)}
startup_timeout_sec = 30
required = true

[mcp_servers.eonyx.tools.memory_add]
approval_mode = "approve"
"""


@dataclass
class Codex:
    """The `codex` command with its own HOME and CODEX_HOME, run in an empty directory."""

    command: Path
    home: Path
    workdir: Path
    env: dict[str, str]

    def exec(self, *args: str) -> Ran:
        """`codex exec <args>`, which must exit 0."""
        command = [str(self.command), "exec", "--skip-git-repo-check", "--strict-config",
                   "--color", "never", *args]  # fmt: skip
        done = subprocess.run(
            command,
            cwd=self.workdir,
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
        ran = Ran(done.stdout, done.stderr)
        assert done.returncode == 0, f"codex exec exited {done.returncode}\n{ran}"
        return ran


@dataclass
class Ran:
    """What a run printed: the answer on stdout, its progress on stderr."""

    answer: str
    progress: str

    def __str__(self) -> str:
        return f"stdout:\n{self.answer}\nstderr:\n{self.progress}"


@pytest.fixture
def eonyx(make_facade: Callable[..., Facade]) -> Facade:  # noqa: F811
    """The facade on loopback, its user's profile holding what only Eonyx knows."""
    served = make_facade()
    response = httpx.put(
        f"{served.url}/api/v1/memory/user",
        json={"content": f"- {REMEMBERED}\n"},
        headers=served.user.headers,
    )
    assert response.status_code == 200, response.text
    return served


@pytest.fixture
def codex(eonyx: Facade, tmp_path: Path) -> Codex:
    command = programs.ensure(programs.CODEX)
    home, workdir = tmp_path / "home", tmp_path / "work"
    (home / ".codex").mkdir(parents=True)
    workdir.mkdir()
    (home / ".codex" / "config.toml").write_text(config_toml(eonyx))
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "CODEX_HOME": str(home / ".codex"),
        KEY_VARIABLE: eonyx.user.token,
        # Whatever would still phone home fails at once and never leaves the machine.
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "HTTP_PROXY": "http://127.0.0.1:9",
        "NO_PROXY": "127.0.0.1",
    }
    return Codex(command, home, workdir, env)


def answers(eonyx: Facade) -> list[dict[str, Any]]:
    """The requests that reached the model, as it received them."""
    return [request.body for request in eonyx.llm.completions]


def user_turns(eonyx: Facade, session_id: str) -> list[str]:
    return [str(text) for role, text in eonyx.transcript(session_id) if role == "user"]


def test_codex_reads_eonyx_memory_over_mcp_in_one_listed_session(
    codex: Codex, eonyx: Facade
) -> None:
    ran = codex.exec(ASK)

    assert "mcp: eonyx/memory_read (completed)" in ran.progress, ran
    assert ran.answer.startswith("The tool said:"), ran
    assert REMEMBERED in ran.answer, ran
    asked, told = answers(eonyx)
    system = asked["messages"][0]
    assert system["role"] == "system"
    assert CODEX_PROMPT in system["content"]  # Codex's instructions reached the model
    assert REMEMBERED in system["content"]  # store: false, yet Eonyx's memory is there
    names = {tool["function"]["name"] for tool in asked["tools"]}
    assert "mcp__eonyx__memory_read" in names
    [call] = told["messages"][-2]["tool_calls"]
    assert call["function"]["name"] == "mcp__eonyx__memory_read"
    result = told["messages"][-1]
    assert result["role"] == "tool"
    assert REMEMBERED in result["content"]  # what Eonyx's MCP server answered Codex
    [session] = eonyx.sessions()
    assert not session["temporary"]
    assert user_turns(eonyx, session["id"])[-1] == ASK


def test_a_resumed_run_continues_its_session_and_a_new_run_starts_another(
    codex: Codex, eonyx: Facade
) -> None:
    first = codex.exec(ASK)
    [started] = eonyx.sessions()
    resumed = codex.exec("resume", "--last", "Thank you, that is all.")
    assert "Thank you, that is all." in resumed.answer, resumed
    [codex_session] = SESSION_ID.findall(first.progress)
    assert SESSION_ID.findall(resumed.progress) == [codex_session], resumed
    [continued] = eonyx.sessions()
    assert continued["id"] == started["id"]
    assert user_turns(eonyx, started["id"])[-2:] == [ASK, "Thank you, that is all."]

    codex.exec("Say hello to a new run.")
    sessions = {s["id"]: s for s in eonyx.sessions()}
    assert len(sessions) == 2, sessions
    [other] = set(sessions) - {started["id"]}
    assert user_turns(eonyx, other)[-1] == "Say hello to a new run."


def test_an_approved_memory_add_through_codex_lands_in_eonyx_memory(
    codex: Codex, eonyx: Facade
) -> None:
    """Codex runs an MCP tool that is not read-only only when approved: config_toml approves
    memory_add, as a user who wants Codex to save to Eonyx does (Codex's own error otherwise:
    "MCP tool call requires approval, but approval policy is never")."""
    entry = "Ships with make deploy"
    ran = codex.exec(f"Call mcp__eonyx__memory_add with kind: agent content: '{entry}'")

    assert "mcp: eonyx/memory_add (completed)" in ran.progress, ran
    assert f"Saved: added {entry!r} to MEMORY.md." in ran.answer, ran
    memory = httpx.get(f"{eonyx.url}/api/v1/memory/agent", headers=eonyx.user.headers)
    assert f"- {entry}\n" in memory.json()["content"]
