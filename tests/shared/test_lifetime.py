"""A process started with the parent-death signal dies when its parent is killed outright
(Linux), even one that execs another binary: nothing of a killed tree runs on with parent 1."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from tests.cli.serving import zombie_or_gone
from tests.conftest import wait_for

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux's")

# A parent that starts a `sleep` (another binary: the signal survives exec), with or without
# the parent-death signal, prints its pid and waits to be killed.
PARENT = """
import subprocess, sys
from shared.core.lifetime import preexec_die_with_parent
preexec = preexec_die_with_parent() if sys.argv[1] == "yes" else None
child = subprocess.Popen(["sleep", "120"], preexec_fn=preexec, start_new_session=True)
print(child.pid, flush=True)
sys.stdin.read()
"""


def start_family(die_with_parent: str) -> tuple[subprocess.Popen[str], int]:
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, die_with_parent],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert parent.stdout is not None
    return parent, int(parent.stdout.readline())


@pytest.mark.parametrize("asked", ["yes", "no"])
def test_a_child_dies_with_its_killed_parent_only_when_asked(asked: str) -> None:
    parent, child = start_family(asked)
    with parent:
        try:
            os.kill(parent.pid, signal.SIGKILL)
            parent.wait(10)
            if asked == "yes":
                wait_for(lambda: zombie_or_gone(child), 10, "the child to die with its parent")
            else:
                assert not zombie_or_gone(child)  # the flaw it fixes: an orphan, parent 1
        finally:
            if not zombie_or_gone(child):
                os.kill(child, signal.SIGKILL)
