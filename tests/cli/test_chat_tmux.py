"""`eonyx chat` in a real terminal: tmux runs the command against a live server, the test
types with send-keys and reads the screen with capture-pane (start, one turn, /rename,
/quit). tmux gets a socket of its own in the test's directory, so nobody else's sessions are
touched and nothing is left behind."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.cli.conftest import Live
from tests.conftest import IN_CI
from tests.fake_llm import fake_llm, text

__all__ = ["fake_llm"]
pytestmark = [
    pytest.mark.slow,
    pytest.mark.parametrize("backend", ["embedded"], indirect=True),
]
WAIT = 30.0  # seconds the screen may take to show something (a failure past it, not a timing)


class Terminal:
    """One tmux session on a private socket."""

    def __init__(self, socket: Path) -> None:
        self.socket = socket

    def tmux(self, *args: str) -> str:
        result = subprocess.run(
            ["tmux", "-S", str(self.socket), *args], capture_output=True, text=True, check=True
        )
        return result.stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "chat")

    def type(self, text: str) -> None:
        self.tmux("send-keys", "-t", "chat", "-l", text)
        self.tmux("send-keys", "-t", "chat", "Enter")

    def wait_for(self, what: str | Callable[[str], bool]) -> str:
        test = what if callable(what) else (lambda screen: what in screen)
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            screen = self.screen()
            if test(screen):
                return screen
            time.sleep(0.1)
        pytest.fail(f"the terminal never showed {what!r}; it shows:\n{self.screen()}")


def wait_for_file(path: Path) -> str:
    deadline = time.monotonic() + WAIT
    while not (path.exists() and path.read_text().endswith("\n")):
        if time.monotonic() > deadline:
            pytest.fail(f"the program did not end within {WAIT:g} s")
        time.sleep(0.1)
    return path.read_text().strip()


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    if shutil.which("tmux") is None:
        if IN_CI:
            pytest.fail("CI needs tmux for the terminal test")
        pytest.skip("tmux is not installed")
    term = Terminal(tmp_path / "tmux.sock")
    yield term
    subprocess.run(["tmux", "-S", str(term.socket), "kill-server"], capture_output=True)


def start_chat(live: Live, terminal: Terminal, tmp_path: Path, *args: str) -> Path:
    """`eonyx chat ARGS` in the terminal (100x30); returns the file its exit status goes to."""
    env = {
        "EONYX_URL": live.url,
        "EONYX_TOKEN": live.user.token,
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "PATH": os.environ.get("PATH", ""),
        "TERM": "xterm-256color",
    }
    # The shell writes the program's exit status down: tmux's own `pane_dead_status` stays
    # blank when tmux is late to reap the process (seen: a zombie for 30 s under load).
    exit_file = tmp_path / "exit-status"
    command = [shlex.quote(sys.executable), "-m", "cli", "chat", *map(shlex.quote, args)]
    command += ["; echo $? >", shlex.quote(str(exit_file))]
    terminal.tmux(
        "new-session", "-d", "-s", "chat", "-x", "100", "-y", "30", "-c", str(Path.cwd()),
        *[arg for name, value in env.items() for arg in ("-e", f"{name}={value}")],
        " ".join(command),
    )  # fmt: skip
    terminal.tmux("set-option", "-t", "chat", "remain-on-exit", "on")
    terminal.wait_for("Message, or / for commands")
    return exit_file


def quit_chat(terminal: Terminal, exit_file: Path) -> None:
    terminal.type("/quit")
    status = wait_for_file(exit_file)
    assert status == "0", f"eonyx chat exited with {status}:\n{terminal.screen()}"


def test_chat_in_a_real_terminal(live: Live, terminal: Terminal, tmp_path: Path) -> None:
    exit_file = start_chat(live, terminal, tmp_path, "--new")
    terminal.wait_for("new session")

    live.llm.script(text("Hello from the **model**."))
    terminal.type("Hello over tmux")
    screen = terminal.wait_for("Hello from the model.")
    assert "Hello over tmux" in screen
    session_id = live.session_ids()[0]
    assert live.transcript(session_id) == [
        ("user", "Hello over tmux"),
        ("assistant", "Hello from the **model**."),
    ]
    made = live.api("GET", f"/sessions/{session_id}")
    assert (made["source"], made["title"]) == ("cli", "1")  # seen before: web, in the header too
    assert terminal.screen().splitlines()[0].split() == ["1", "cli"]

    terminal.type("/rename Terminal test")
    terminal.wait_for("renamed to 'Terminal test'")
    assert terminal.screen().splitlines()[0].strip().startswith("Terminal test")
    assert live.api("GET", f"/sessions/{session_id}")["title"] == "Terminal test"

    quit_chat(terminal, exit_file)


def seed_sessions(live: Live, *titles: str) -> list[str]:
    """A session per title, each with one answered message (an empty one is not listed)."""
    ids = []
    for title in titles:
        session_id = live.api("POST", "/sessions", json={})["id"]
        live.llm.script(text(f"answer in {title}"))
        live.api("POST", f"/sessions/{session_id}/turns", json={"content": f"about {title}"})
        live.api("PATCH", f"/sessions/{session_id}", json={"title": title})
        ids.append(session_id)
    return ids


def test_the_session_manager_draws_its_list_and_its_search(
    live: Live, terminal: Terminal, tmp_path: Path
) -> None:
    """Seen before: the list stayed `● ● ● ● ●` until the terminal was resized, although the
    server had answered (the screen's own `loading` flag, set and cleared without a redraw)."""
    seed_sessions(live, "Parser rewrite", "Tea party plans", "Garden notes")
    exit_file = start_chat(live, terminal, tmp_path, "--new")

    titles = ("Parser rewrite", "Tea party plans", "Garden notes")
    terminal.tmux("send-keys", "-t", "chat", "C-s")
    # The status line may be drawn a frame before the table widens its title column to the
    # rows just added (the title cut to the header's width until then): wait for both.
    screen = terminal.wait_for(lambda screen: all(t in screen for t in ("3 sessions", *titles)))
    assert "● ● ●" not in screen

    terminal.tmux("send-keys", "-t", "chat", "/")
    terminal.wait_for("search titles and text")
    terminal.type("tea")
    screen = terminal.wait_for(
        lambda screen: "1 session matching 'tea'" in screen and "Tea party plans" in screen
    )
    assert "Parser rewrite" not in screen

    terminal.tmux("send-keys", "-t", "chat", "Escape")
    terminal.wait_for("Message, or / for commands")
    terminal.type("/sessions garden")
    terminal.wait_for(
        lambda screen: "1 session matching 'garden'" in screen and "Garden notes" in screen
    )
    terminal.tmux("send-keys", "-t", "chat", "Escape")
    terminal.wait_for("Message, or / for commands")
    terminal.type("/sessions answers")  # in the text only: each hit with its snippet below it
    lines = terminal.wait_for(
        lambda screen: all(t in screen for t in ("3 sessions matching 'answers'", *titles))
    ).splitlines()
    for title in titles:
        at = next(n for n, line in enumerate(lines) if line.strip().startswith(title))
        assert lines[at + 1].strip().startswith(f"answer in {title}")
    terminal.tmux("send-keys", "-t", "chat", "Escape")
    terminal.wait_for("Message, or / for commands")
    quit_chat(terminal, exit_file)


def resident_mb(terminal: Terminal) -> float:
    """The resident memory of `eonyx chat` (the pane's shell's child), in MB."""
    shell = terminal.tmux("display-message", "-p", "-t", "chat", "#{pane_pid}").strip()
    children = Path(f"/proc/{shell}/task/{shell}/children").read_text().split()
    status = Path(f"/proc/{children[0]}/status").read_text()
    kilobytes = next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS"))
    return int(kilobytes) / 1024


def test_a_long_paste_that_arrives_as_keystrokes_is_sent_whole(
    live: Live, terminal: Terminal, tmp_path: Path
) -> None:
    """A terminal without bracketed paste (tmux paste-buffer without -p) types the text key by
    key. Seen before: 50,000 characters, then Enter did nothing, a core at 100 % and memory past
    1 GB within 90 s. The text arrives whole, the answer comes, the memory stays small."""
    pasted = "lorem ipsum " * 4166 + "END-OF-PASTE"  # 50,004 characters, one line
    (tmp_path / "paste.txt").write_text(pasted)
    exit_file = start_chat(live, terminal, tmp_path, "--new")
    terminal.wait_for("new session")
    terminal.tmux("load-buffer", "-b", "big", str(tmp_path / "paste.txt"))
    terminal.tmux("paste-buffer", "-b", "big", "-t", "chat")
    terminal.wait_for("END-OF-PASTE")
    assert resident_mb(terminal) < 300

    live.llm.script(text("Read all of it."))
    terminal.tmux("send-keys", "-t", "chat", "Enter")
    terminal.wait_for("Read all of it.")
    session_id = live.session_ids()[0]
    assert live.transcript(session_id) == [("user", pasted), ("assistant", "Read all of it.")]
    assert resident_mb(terminal) < 300
    quit_chat(terminal, exit_file)
