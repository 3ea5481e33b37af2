"""The app owns its runtime: it is reached through one helper and closed with the app."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

from api.app import create_app
from api.context import runtime_of
from tests.conftest import make_settings

ROOT = Path(__file__).resolve().parents[2]


def test_the_runtime_is_closed_when_the_app_goes_away(tmp_path: Path) -> None:
    app = create_app(make_settings(tmp_path / "data"))
    runtime = runtime_of(app)
    assert not runtime.closed
    del app
    gc.collect()
    assert runtime.closed


def test_the_runtime_is_closed_when_the_process_exits(tmp_path: Path) -> None:
    code = (
        "from pathlib import Path\n"
        "from shared.runtime import Runtime\n"
        "close = Runtime.close\n"
        "Runtime.close = lambda self: (close(self), print('runtime closed'))\n"
        "from api.app import create_app\n"
        "from tests.conftest import make_settings\n"
        f"app = create_app(make_settings(Path({str(tmp_path / 'data')!r})))\n"
        "print('exiting')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["exiting", "runtime", "closed"]
