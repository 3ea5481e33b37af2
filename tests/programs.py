"""The agents and tools people already use, installed for the suite at pinned versions:
Codex CLI, Claude Code and MCP Inspector from the npm registry, aider from PyPI (in a
virtual environment of its own: its pins would fight the project's).

Each is installed once per machine into `EONYX_PROGRAMS_DIR` (by default
~/.cache/eonyx/test-programs), under a lock so that pytest-xdist's workers share one
install, and a fresh clone reuses it. When a registry cannot be reached the tests that need
the program are skipped with the installer's own words, never silently; the failure is
remembered for the run (one attempt per program, not one per test).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

INSTALL_TIMEOUT = 600  # seconds: a cold npm or pip install of the largest one, with margin
WHOLE = ".installed"  # written last: the install finished


@dataclass(frozen=True)
class Program:
    """A program at a pinned version: `registry` is "npm" or "pypi", `binary` the command
    it installs."""

    name: str
    package: str
    version: str
    registry: str
    binary: str

    @property
    def spec(self) -> str:
        return (
            f"{self.package}@{self.version}"
            if self.registry == "npm"
            else (f"{self.package}=={self.version}")
        )


CODEX = Program("codex", "@openai/codex", "0.171.0", "npm", "codex")
CLAUDE_CODE = Program("claude-code", "@anthropic-ai/claude-code", "2.1.332", "npm", "claude")
MCP_INSPECTOR = Program(
    "mcp-inspector", "@modelcontextprotocol/inspector", "2.12.0", "npm", "mcp-inspector"
)
AIDER = Program("aider", "aider-chat", "0.86.2", "pypi", "aider")
ALL = (CODEX, CLAUDE_CODE, MCP_INSPECTOR, AIDER)


def root() -> Path:
    configured = os.environ.get("EONYX_PROGRAMS_DIR")
    return Path(configured) if configured else Path.home() / ".cache" / "eonyx" / "test-programs"


def _home(program: Program) -> Path:
    return root() / f"{program.name}-{program.version}"


def _binary(program: Program) -> Path:
    home = _home(program)
    if program.registry == "npm":
        return home / "node_modules" / ".bin" / program.binary
    return home / "bin" / program.binary


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _install_command(program: Program, home: Path) -> list[str]:
    if program.registry == "npm":
        npm = shutil.which("npm") or "npm"
        return [npm, "install", "--prefix", str(home), "--no-audit", "--no-fund",
                "--loglevel=error", program.spec]  # fmt: skip
    return [str(home / "bin" / "pip"), "install", "--quiet", program.spec]


def _install(program: Program) -> str | None:
    """Install `program` where it stays (a venv cannot be moved), marking it whole at the
    end: a half-made install, from a run that was killed, is made anew. None, or why not."""
    home = _home(program)
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    try:
        if program.registry == "pypi":
            subprocess.run([sys.executable, "-m", "venv", str(home)], check=True)
        done = subprocess.run(
            _install_command(program, home),
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{type(exc).__name__}: {exc}"
    if done.returncode != 0:
        return (done.stderr or done.stdout).strip()[-800:] or f"exit {done.returncode}"
    if not _binary(program).exists():
        return f"{_binary(program)} is missing after the install"
    (home / WHOLE).touch()
    return None


_failed: dict[str, str] = {}  # this process's failed installs: one attempt per program


def ensure(program: Program) -> Path:
    """The path of `program`'s command, installed if it is not yet; skips the calling test
    with the installer's words when it cannot be installed."""
    if program.name not in _failed:
        with _locked(root() / f".{program.name}.lock"):
            if not (_home(program) / WHOLE).exists():
                why = _install(program)
                if why is not None:
                    _failed[program.name] = why
    if program.name in _failed:
        pytest.skip(f"{program.spec} could not be installed: {_failed[program.name]}")
    return _binary(program)
