"""Keeping Python's cyclic garbage collector out of a hot path that makes only acyclic garbage.

A search for a common word reads thousands of rows, each a tuple the collector tracks; they
are all freed when the search returns, and none is part of a cycle. Yet while they live they
count towards the next young collection (every 700 new objects by default), survivors of
young collections are promoted, and the promotions are what set off a full collection, which
walks every object of the process: in a harness holding a million objects, a search now and
then took four times its median (issue 42: a p95 of 95 ms for a p50 of 23 ms).

`paused` turns the collector off for such a call and back on after it. The count of new
objects drops again as the call's garbage is freed, so nothing is owed afterwards. The
collector's switch is the process's, not the thread's: the pause that turned it off turns it
on again, one that found it off leaves it so. Overlapping pauses in two threads thus end
with it on (the later one may finish with it on already), and a collector someone else
turned off stays off.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


def paused(call: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """`call(*args, **kwargs)` with the collector off; whatever `call` keeps in locals is freed
    before it is on again (hence a call, not a `with` block around the caller's code)."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        return call(*args, **kwargs)
    finally:
        if was_on:
            gc.enable()
