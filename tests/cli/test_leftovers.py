"""What a killed `eonyx serve` left on its DATA_DIR: its run files are removed at the next
start; a server still running, or a process of a dead one still alive, is named with what to
stop, and nothing is removed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli import leftovers, runfile
from cli.processes import command_line
from shared.core.settings import load_settings
from tests.conftest import wait_for

DEAD_PID = 2**22 + 12345  # above any pid_max: never alive


@pytest.fixture(autouse=True)
def pointers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "passwd-home" / "servers"
    monkeypatch.setattr(runfile, "pointer_dir", lambda: path)
    return path


@pytest.fixture
def stray() -> Iterator[subprocess.Popen[bytes]]:
    """A process in a group of its own, as each child of serve is. Popen returns once the
    exec is committed, which is a moment before the kernel fills in the new command line
    (/proc/<pid>/cmdline reads empty until then): wait for it, as a person would see it."""
    process = subprocess.Popen(["sleep", "120"], start_new_session=True)
    wait_for(lambda: command_line(process.pid), 5, "the stray's command line")
    yield process
    process.kill()
    process.wait()


def written(tmp_path: Path, pid: int, groups: dict[str, int]) -> Path:
    settings = load_settings({"DATA_DIR": str(tmp_path / "data")})
    path = runfile.write(settings, "http://127.0.0.1:8000", groups)[0]
    path.write_text(json.dumps(json.loads(path.read_text()) | {"pid": pid}))
    return settings.data_dir


def test_a_dead_servers_run_files_are_removed(tmp_path: Path, pointers: Path) -> None:
    data_dir = written(tmp_path, DEAD_PID, {"worker": DEAD_PID})
    assert len(list(pointers.iterdir())) == 1
    cleared = leftovers.clear(data_dir)
    assert cleared is not None
    assert cleared.pid == DEAD_PID
    assert not (data_dir / "run" / "settings.json").exists()
    assert not list(pointers.iterdir())
    assert leftovers.clear(data_dir) is None


def test_a_dead_servers_live_child_is_named_with_what_to_stop(
    tmp_path: Path, stray: subprocess.Popen[bytes]
) -> None:
    data_dir = written(tmp_path, DEAD_PID, {"worker": stray.pid})
    with pytest.raises(leftovers.StillRunning) as raised:
        leftovers.clear(data_dir)
    message = str(raised.value)
    assert f"(pid {DEAD_PID}) is gone, but processes it started still run" in message
    assert f"{stray.pid}  worker: sleep 120" in message
    assert message.endswith(f"kill {stray.pid}")
    assert (data_dir / "run" / "settings.json").exists()  # kept until that is done
    os.kill(stray.pid, signal.SIGKILL)
    stray.wait()
    assert leftovers.clear(data_dir) is not None


def test_a_server_still_running_is_named(tmp_path: Path) -> None:
    serve_like = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "serve"])
    try:
        data_dir = written(tmp_path, serve_like.pid, {})
        with pytest.raises(leftovers.StillRunning, match=f"Eonyx already runs on {data_dir}"):
            leftovers.clear(data_dir)
    finally:
        serve_like.kill()
        serve_like.wait()
