"""`eonyx chat` in a real terminal: launch to an interactive prompt with 10,000 sessions on the
server, and keystroke-to-screen latency while an answer streams at 100 tokens/s.

    .venv/bin/python bench/bench_chat.py [--sessions 10000] [--launches 5] [--keys 30]

The app is served by werkzeug's threaded server from this process, the model is
tests/fake_llm.py. `eonyx chat` runs as its own process under tmux (its socket in the
temporary directory); the script types with `send-keys` and reads the screen with
`capture-pane`, every 20 ms for the launch and every 5 ms for a keystroke (plus the few ms a
poll takes): the resolution of the figures. Polling back to back would take a core from the
program being measured.

- launch: from `tmux new-session` (the command starts) until the prompt is on screen, and
  until the resumed session's title is in the header (the last of 10,000 sessions, found
  through the listing). Target: p50 of the prompt < 1.5 s; the resumed session is shown too.
- keystroke: one character sent, until it shows in the prompt line; --keys of them 100 ms
  apart, while the model streams an answer at 100 chunks of 4 characters a second (one chunk
  is about one token), and the same with nothing streaming, for comparison. No target; the
  figures go in the closing note of the issue.
"""

from __future__ import annotations

import argparse
import os
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Callable

from _common import (
    ROOT,
    base_parser,
    bench_account,
    make_sessions,
    median,
    percentile,
    print_header,
    print_table,
    verdict,
    workspace,
)
from werkzeug.serving import WSGIRequestHandler, make_server

from api.app import create_app
from api.context import runtime_of
from shared.core.settings import load_settings
from shared.index import sync
from tests.fake_llm import FakeLLM, text
from workers.queue import celery_jobs

TARGET_LAUNCH_S = 1.5
PROMPT = "Message, or / for commands"
MARK = "z"  # the typed character; the streamed answer never contains it
ANSWER_WORDS = "alpha beta gamma delta epsilon theta omega "


class QuietHandler(WSGIRequestHandler):
    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        pass


class Tmux:
    def __init__(self, env: dict[str, str], folder: str) -> None:
        self.socket = os.path.join(folder, f"tmux-{secrets.token_hex(4)}.sock")
        self.env = env

    def run(self, *args: str) -> str:
        return subprocess.run(
            ["tmux", "-S", self.socket, *args], capture_output=True, text=True, check=True
        ).stdout

    def start(self, *command: str) -> float:
        """Start `command` in a fresh 120x40 window; the time it was started."""
        env = [arg for k, v in self.env.items() for arg in ("-e", f"{k}={v}")]
        started = time.perf_counter()
        self.run("new-session", "-d", "-s", "chat", "-x", "120", "-y", "40", *env, *command)
        return started

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "chat")

    def wait(
        self, test: Callable[[str], bool], timeout: float = 60.0, every: float = 0.02
    ) -> tuple[float, str]:
        """Poll the screen `every` seconds (polling back to back would take a core from the
        program measured) until `test` holds; when it was seen, and the screen."""
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            screen = self.screen()
            if test(screen):
                return time.perf_counter(), screen
            time.sleep(every)
        raise SystemExit(f"the screen never showed what was waited for:\n{self.screen()}")

    def keys(self, *keys: str, literal: bool = False) -> None:
        self.run("send-keys", "-t", "chat", *(["-l"] if literal else []), *keys)

    def cpu_seconds(self) -> float:
        """User + system CPU the pane's process (the chat, exec'd by the shell) used so far."""
        pid = self.run("display-message", "-p", "-t", "chat", "#{pane_pid}").strip()
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def kill(self) -> None:
        subprocess.run(["tmux", "-S", self.socket, "kill-server"], capture_output=True)


def prompt_marks(screen: str) -> int:
    return screen.count(MARK)  # nothing else on the screen has one


def keystrokes(tmux: Tmux, count: int) -> list[float]:
    """Seconds from each sent character to its appearance on screen."""
    samples = []
    shown = prompt_marks(tmux.screen())
    for _ in range(count):
        sent = time.perf_counter()
        tmux.keys(MARK, literal=True)
        seen, screen = tmux.wait(lambda s, n=shown: prompt_marks(s) > n, timeout=10, every=0.005)
        samples.append(seen - sent)
        shown = prompt_marks(screen)
        time.sleep(0.1)
    tmux.keys("C-u")  # empty the prompt again
    return samples


def main() -> int:
    parser = base_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--launches", type=int, default=5, help="timed launches (after one)")
    parser.add_argument("--keys", type=int, default=30, help="keystrokes per condition")
    args = parser.parse_args()

    fake = FakeLLM().start()
    try:
        with workspace(args.database_url, keep=args.keep) as ws:
            settings = load_settings(
                {
                    "DATA_DIR": str(ws.data_dir),
                    "DATABASE_URL": ws.database_url,
                    "HOME": str(ws.root),
                    "EONYX_LLM_BASE_URL": fake.base_url,
                    "EONYX_LLM_MODEL": "fake-model",
                    "EONYX_LLM_CONTEXT_WINDOW": "128000",
                    "LLM_MAX_RETRIES": "0",
                }
            )
            app = create_app(settings, jobs_queue=celery_jobs(settings))
            rt = runtime_of(app)
            server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=QuietHandler)
            threading.Thread(target=server.serve_forever, daemon=True).start()
            principal, token = bench_account(rt)
            print_header("bench_chat", ws, f"{args.sessions} sessions")
            data = make_sessions(rt.store, principal.user_id, args.sessions)
            with rt.db.session() as db:
                sync.reconcile_user(db, rt.store, principal.user_id)
            print(f"   data: {data.sessions} sessions written in {data.seconds:.1f} s")
            env = {
                "EONYX_URL": f"http://127.0.0.1:{server.server_port}",
                "EONYX_TOKEN": token,
                "XDG_CONFIG_HOME": str(ws.root),  # also where tmux's sockets go
                "TERM": "xterm-256color",
                "PATH": os.environ.get("PATH", ""),
            }
            try:
                load_before = os.getloadavg()[0]
                launches, loaded, cpu, idle, streaming = measure(args, env, fake, str(ROOT))
                load_after = os.getloadavg()[0]
            finally:
                server.shutdown()
                server.server_close()
                rt.close()
    finally:
        fake.stop()

    print()
    rows = [
        ["launch: prompt on screen", launches],
        ["launch: resumed session shown", loaded],
        ["launch: CPU of the chat process to the prompt", cpu],
        ["keystroke, idle", idle],
        ["keystroke, streaming 100 tok/s", streaming],
    ]
    print_table(
        ["what", "runs", "p50 ms", "p95 ms", "max ms"],
        [
            [name, str(len(v)), f"{median(v) * 1e3:.0f}", f"{percentile(v, 95) * 1e3:.0f}",
             f"{max(v) * 1e3:.0f}"]
            for name, v in rows
        ],
    )  # fmt: skip
    print(
        f"   load average {load_before:.1f} before, {load_after:.1f} after, on "
        f"{os.cpu_count()} cpu: with a load above the cpu count the wall-clock figures include "
        "waiting for a cpu; the CPU row does not"
    )
    return verdict(
        [(f"launch to the prompt p50 < {TARGET_LAUNCH_S} s", median(launches) < TARGET_LAUNCH_S)]
    )


def measure(
    args: argparse.Namespace, env: dict[str, str], fake: FakeLLM, cwd: str
) -> tuple[list[float], ...]:
    command = ("cd", cwd, "&&", "exec", sys.executable, "-m", "cli", "chat")
    launches: list[float] = []
    loaded: list[float] = []
    cpu: list[float] = []
    for run in range(args.launches + 1):
        tmux = Tmux(env, env["XDG_CONFIG_HOME"])
        try:
            started = tmux.start(" ".join(command))
            prompt_at, _ = tmux.wait(lambda s: PROMPT in s)
            prompt_cpu = tmux.cpu_seconds()
            # The resumed session's title replaces "new session"/"untitled" in the header.
            shown_at, _ = tmux.wait(lambda s: "#" in s.splitlines()[0])
            if run:  # the first launch warms the disk cache and bytecode; it is not counted
                launches.append(prompt_at - started)
                loaded.append(shown_at - started)
                cpu.append(prompt_cpu)
        finally:
            tmux.kill()

    tmux = Tmux(env, env["XDG_CONFIG_HOME"])
    try:
        tmux.start(" ".join((*command, "--new")))
        tmux.wait(lambda s: PROMPT in s)
        idle = keystrokes(tmux, args.keys)
        chunks = int((args.keys * 0.25 + 10) * 100)  # outlasts the keystrokes
        fake.script(text(ANSWER_WORDS * (chunks * 4 // len(ANSWER_WORDS)), chunk_delay=0.01))
        tmux.keys("go", literal=True)
        tmux.keys("Enter")
        tmux.wait(lambda s: "alpha beta" in s)
        streaming = keystrokes(tmux, args.keys)
        if "{ctx" in tmux.screen().splitlines()[0]:  # the gauge comes with the finished turn
            raise SystemExit("the answer ended before the keys were measured: raise its length")
        tmux.keys("Escape")
    finally:
        tmux.kill()
    return launches, loaded, cpu, idle, streaming


if __name__ == "__main__":
    sys.exit(main())
