"""serve's children: a dead one is started again with growing delays, and what it left
behind in its process group (the worker's beat) is killed first; stopping stops the group."""

from __future__ import annotations

import os
import signal
import sys
import time

from cli.processes import Child, Supervised, group_alive
from tests.cli.serving import children_of, zombie_or_gone
from tests.conftest import wait_for

# A leader that starts a grandchild in its own group (as the worker starts beat).
FAMILY = (
    "import subprocess, sys, time;"
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)']);"
    "time.sleep(120)"
)


def grandchildren(child: Child) -> list[int]:
    assert child.pid is not None
    return wait_for(lambda: children_of(child.pid), 10, "the grandchild")  # type: ignore[arg-type]


def test_a_killed_child_is_restarted_with_backoff_and_its_group_killed_first() -> None:
    said: list[str] = []
    child = Child("worker", [sys.executable, "-c", FAMILY], dict(os.environ))
    supervised = Supervised(child, said.append)
    supervised.start()
    try:
        first = child.pid
        assert first is not None
        orphan = grandchildren(child)[0]

        os.kill(first, signal.SIGKILL)
        wait_for(lambda: (supervised.check(), said)[1], 10, "the death to be noticed")
        assert said == ["the worker was killed by SIGKILL; starting it again in 1 s"]
        wait_for(lambda: zombie_or_gone(orphan), 10, "the orphaned grandchild to be killed")

        wait_for(lambda: (supervised.check(), child.pid != first)[1], 10, "a restart")
        second = child.pid
        assert second is not None
        assert group_alive(second)
        grandchildren(child)

        os.kill(second, signal.SIGTERM)  # dies young again: a longer wait
        wait_for(lambda: (supervised.check(), len(said) == 2)[1], 10, "the second death")
        assert said[1] == "the worker was killed by SIGTERM; starting it again in 2 s"
        time.sleep(0.5)
        supervised.check()
        assert child.pid == second  # not yet
        wait_for(lambda: (supervised.check(), child.pid != second)[1], 10, "a second restart")
    finally:
        supervised.stop(grace=5)
    assert child.pid is not None
    assert not group_alive(child.pid)
