"""The client side of bench_turn: the fake model's answers, prepared sessions, and the
interleaved rounds of requests (used by the served run and by the in-process breakdown)."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

import _common  # noqa: F401 - puts the repository first on sys.path (tests/ is not installed)
import httpx
from _turn_steps import Recorder

from shared.chat.compaction import SUMMARIZER_INSTRUCTIONS
from shared.files.session_store import SessionStore
from tests.fake_llm import FakeLLM, RecordedRequest, Reply, echo, text

CONTENT = "What did we decide about the cache?"
SUMMARY = "## Decisions\n" + "Keep the cache small and the file the truth. " * 30


class Model:
    """The fake's answers: a short summary to a summary request, the echo otherwise; counts
    summary requests so a timed turn that compacted can be told apart."""

    def __init__(self) -> None:
        self.summaries = 0

    def __call__(self, request: RecordedRequest) -> Reply:
        messages = request.messages
        if messages and messages[0].get("content") == SUMMARIZER_INSTRUCTIONS:
            self.summaries += 1
            return text(SUMMARY)
        return echo(request)


class Rotation:
    """Sessions of one length, a new one every `every` turns."""

    def __init__(self, ids: list[str], every: int) -> None:
        self.ids, self.every, self.turns = ids, every, 0

    def next(self) -> tuple[str, bool]:
        """(session id, whether this is its first turn)."""
        index, nth = divmod(self.turns, self.every)
        self.turns += 1
        if index >= len(self.ids):
            raise SystemExit("ran out of prepared sessions")
        return self.ids[index], nth == 0


def prepare_sessions(
    store: SessionStore,
    user_id: str,
    create: Callable[[], str],
    histories: dict[int, list[dict[str, Any]]],
    count: int,
    every: int,
) -> dict[int, Rotation]:
    """`count` sessions per length: created by the server, then given their history by
    appending to the file (as another process would)."""
    rotations = {}
    for length, history in histories.items():
        ids = []
        for _ in range(count):
            session_id = create()
            if history:
                store.append(user_id, session_id, history)
            ids.append(session_id)
        rotations[length] = Rotation(ids, every)
    return rotations


class Driver:
    """One client sending turns; remembers the body each length's last turn sent the model."""

    def __init__(self, client: httpx.Client, base: str, fake: FakeLLM, model: Model) -> None:
        self.client, self.base, self.fake, self.model = client, base, fake, model
        self.bodies: dict[int, Any] = {}
        self.compacted = 0  # timed turns that compacted (a session's first turn may)

    def get(self, path: str) -> None:
        response = self.client.get(f"{self.base}{path}")
        if response.status_code != 200:
            raise SystemExit(f"GET {path} answered {response.status_code}: {response.text}")

    def turn(self, length: int, session_id: str) -> bool:
        """One turn; whether it asked the model for a summary."""
        before = self.model.summaries
        response = self.client.post(
            f"{self.base}/api/v1/sessions/{session_id}/turns", json={"content": CONTENT}
        )
        if response.status_code != 200:
            raise SystemExit(f"turn answered {response.status_code}: {response.text[:300]}")
        if response.json()["assistant_message"]["content"] != CONTENT:
            raise SystemExit("the turn's answer is not the fake's echo")
        self.bodies[length] = self.fake.last_request.body
        return self.model.summaries != before

    def model_call(self, length: int) -> None:
        response = self.client.post(
            f"{self.fake.base_url}/chat/completions", json=self.bodies[length]
        )
        if response.status_code != 200:
            raise SystemExit(f"the fake answered {response.status_code}")
        response.json()


def timed(fn: Callable[[], None]) -> int:
    t0 = time.perf_counter_ns()
    fn()
    return time.perf_counter_ns() - t0


def run_rounds(
    driver: Driver,
    rotations: dict[int, Rotation],
    rounds: int,
    warmup: int,
    *,
    rec: Recorder | None = None,
    bare: bool = True,
) -> tuple[dict[str, list[int]], dict[int, list[int]]]:
    """Interleaved rounds: client-measured times per variant (after `warmup` rounds) and the
    times of each session's first turn. `rec` (the breakdown's) is told which variant runs
    and whether it counts. The order is shuffled each round: in a rotation each request
    keeps the same predecessor, and always pays for what that one leaves behind."""
    firsts: dict[int, list[int]] = {length: [] for length in rotations}
    recording = False

    def turn(length: int) -> Callable[[], Callable[[], None]]:
        """The next turn of this length, ready to time: a session's first turn (a cold read,
        and compaction when the history needs it) is run here, before, and timed apart."""

        def prepare() -> Callable[[], None]:
            session_id, first = rotations[length].next()
            if first:
                if rec:
                    rec.recording = False
                firsts[length].append(timed(lambda: driver.turn(length, session_id)))
                if rec:
                    rec.recording = recording

            def run() -> None:
                driver.compacted += driver.turn(length, session_id) and recording

            return run

        return prepare

    def ready(fn: Callable[[], None]) -> Callable[[], Callable[[], None]]:
        return lambda: fn

    variants: list[tuple[str, Callable[[], Callable[[], None]]]] = []
    if bare:
        variants += [
            ("bare", ready(lambda: driver.get("/healthz"))),
            ("auth", ready(lambda: driver.get("/api/v1/users/me"))),
        ]
    variants += [(f"turn_{length}", turn(length)) for length in rotations]
    variants += [(f"model_{n}", ready(lambda n=n: driver.model_call(n))) for n in rotations]
    for length in rotations:  # a model call needs a body its length's turn sent
        turn(length)()()
    times: dict[str, list[int]] = {name: [] for name, _ in variants}
    order = random.Random(9)
    for i in range(rounds):
        recording = i >= warmup
        order.shuffle(variants)
        for name, prepare in variants:
            if rec:
                rec.label, rec.recording = name, recording
            elapsed = timed(prepare())
            if recording:
                times[name].append(elapsed)
    if rec:
        rec.recording = False
    return times, firsts
