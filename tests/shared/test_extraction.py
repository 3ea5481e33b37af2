"""Background reconciliation of USER.md: when the job is sent, what it does with the model's
answer, idempotence, the sweep for lost jobs, and where it never runs (temporary, demo)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

from shared.core import job_names
from shared.memory import extraction
from shared.memory.background import MESSAGE_CHARS, TOTAL_CHARS
from shared.memory.extraction import INSTRUCTIONS, extract_user_profile, sweep_extraction
from shared.memory.files import snapshot_of
from tests.api.conftest import API, Chat, RecordingJobs, make_chat  # noqa: F401  (make_chat is a fixture)
from tests.conftest import Backend, MovedClock
from tests.fake_llm import RecordedRequest, Reply, error, text

EXTRACTING = {"USER_MEMORY_EXTRACTION": "true", "USER_MEMORY_EXTRACTION_EVERY_N_TURNS": "4"}
SECRET = "postgres://admin:Xk29dLq7@db.internal:5432/app"  # the filter refuses it


def is_extraction(request: RecordedRequest) -> bool:
    return request.messages[0]["content"] == INSTRUCTIONS.format(limit=1375)


class Model:
    """Chat turns answer 'ok'; extraction requests get `answers` in order (then the last)."""

    def __init__(self, chat: Chat, *answers: Reply) -> None:
        self.answers = list(answers)
        self.extractions: list[RecordedRequest] = []
        chat.llm.set_default(self.reply)

    def reply(self, request: RecordedRequest) -> Reply:
        if not is_extraction(request):
            return text("ok")
        self.extractions.append(request)
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def entries(*items: str) -> Reply:
    return text(json.dumps({"entries": list(items)}))


@pytest.fixture
def chat(make_chat: Callable[..., Chat]) -> Chat:  # noqa: F811
    chat = make_chat(**EXTRACTING)
    chat.rt.jobs = RecordingJobs()
    return chat


def jobs(chat: Chat) -> RecordingJobs:
    assert isinstance(chat.rt.jobs, RecordingJobs)
    return chat.rt.jobs


def talk(chat: Chat, session_id: str, *contents: str) -> None:
    for content in contents:
        response = chat.turn(session_id, content=content)
        assert response.status_code == 200, response.get_json()


def user_md(chat: Chat) -> Path:
    return chat.rt.memory.path("user", chat.user.user_id)


def seed_profile(chat: Chat, content: str) -> bytes:
    chat.rt.memory.save("user", chat.user.user_id, content)
    return user_md(chat).read_bytes()


def marker(chat: Chat, session_id: str) -> int | None:
    state, _ = chat.rt.store.load(chat.user.user_id, session_id)
    return extraction.extracted_turns(state)


def extract(chat: Chat, session_id: str, upto: int):  # type: ignore[no-untyped-def]
    return extract_user_profile(chat.rt, chat.user.user_id, session_id, upto)


def test_the_job_is_sent_after_turns_4_8_and_12_and_no_turn_waits_for_it(chat: Chat) -> None:
    model = Model(chat, entries("x"))
    session_id = chat.new_session()
    for n in range(1, 13):
        talk(chat, session_id, f"message {n}")
        expected = [(chat.user.user_id, session_id, k) for k in (4, 8, 12) if k <= n]
        assert jobs(chat).of(job_names.EXTRACT_MEMORY) == expected, f"after turn {n}"
    # Twelve turns, twelve chat calls: no extraction ran inside a request.
    assert len(chat.llm.completions) == 12
    assert model.extractions == []


def test_a_contradiction_is_reconciled_to_one_line(chat: Chat) -> None:
    seed_profile(chat, "- Answer in English\n- Prefers short answers\n")
    model = Model(chat, entries("Answer in German", "Prefers short answers"))
    session_id = chat.new_session()
    talk(chat, session_id, "hi", "From now on, answer in German please.", "thanks", "ok")

    outcome = extract(chat, session_id, 4)  # what the worker runs

    assert outcome.status == "saved"
    assert outcome.marker == 4
    assert user_md(chat).read_text() == "- Answer in German\n- Prefers short answers\n"
    assert chat.rt.memory.backups("user", chat.user.user_id)  # the old file was kept
    assert marker(chat, session_id) == 4
    (request,) = model.extractions
    prompt = request.messages[1]["content"]
    assert "- Answer in English\n- Prefers short answers" in prompt
    assert "User: From now on, answer in German please.\n\nAssistant: ok" in prompt
    # The running session keeps its frozen snapshot.
    state, _ = chat.rt.store.load(chat.user.user_id, session_id)
    assert "Answer in English" in snapshot_of(state)["user_profile"]


def test_the_model_input_is_bounded(chat: Chat) -> None:
    model = Model(chat, entries("Likes detail"))
    session_id = chat.new_session()
    talk(chat, session_id, *(f"{n}" + "x" * 9_000 for n in range(4)))
    extract(chat, session_id, 4)
    prompt = model.extractions[0].messages[1]["content"]
    conversation = prompt.split("<conversation>\n")[1].split("\n</conversation>")[0]
    assert len(conversation) <= TOTAL_CHARS + 20
    longest = max(len(part) for part in conversation.split("\n\n"))
    assert longest <= len("User: ") + MESSAGE_CHARS
    assert "User: 3xxx" in conversation  # the newest turns are the ones kept


@pytest.mark.parametrize(
    "answer",
    [
        entries(),  # empty: never wipes
        entries("Answer in German", "Prefers short answers"),  # unchanged: no rewrite
        entries("Prefers short answers", "Answer in German"),  # same lines, other order
        text("The user seems to prefer German."),  # not JSON
        text('{"entries": "Answer in German"}'),  # not a list
        text('```json\n{"entries": [1, 2]}\n```'),  # not text entries
        entries("Answer in German", "x" * 1400),  # over the 1,375 cap: refused
        entries("Answer in German", "Prefers short answers", f"Deploys to {SECRET}"),
    ],
    ids=["empty", "same", "reordered", "prose", "not-a-list", "not-text", "over-cap", "secret"],
)
def test_nothing_worth_writing_leaves_user_md_byte_identical(chat: Chat, answer: Reply) -> None:
    before = seed_profile(chat, "- Answer in German\n- Prefers short answers\n")
    backups = chat.rt.memory.backups("user", chat.user.user_id)
    Model(chat, answer)
    session_id = chat.new_session()
    talk(chat, session_id, "a", "b", "c", "d")

    outcome = extract(chat, session_id, 4)

    assert user_md(chat).read_bytes() == before
    assert chat.rt.memory.backups("user", chat.user.user_id) == backups
    assert outcome.status in ("unchanged", "ignored"), outcome
    assert marker(chat, session_id) == 4  # a deliberate no-op is not asked for again


def test_a_flagged_new_entry_is_left_out_and_the_rest_saved(chat: Chat) -> None:
    seed_profile(chat, "- Answer in German\n")
    Model(chat, entries("Answer in German", "Likes tables", f"Deploys to {SECRET}"))
    session_id = chat.new_session()
    talk(chat, session_id, "a", "b", "c", "d")
    outcome = extract(chat, session_id, 4)
    assert outcome.status == "saved"
    assert "safety filter" in outcome.detail
    assert user_md(chat).read_text() == "- Answer in German\n- Likes tables\n"


def test_a_duplicated_or_retried_job_changes_nothing_more(chat: Chat) -> None:
    model = Model(chat, entries("Likes tables"), entries("Likes lists"))
    session_id = chat.new_session()
    talk(chat, session_id, "a", "b", "c", "d")
    assert extract(chat, session_id, 4).status == "saved"
    after = user_md(chat).read_bytes()
    session_file = chat.rt.store.path(chat.user.user_id, session_id).read_bytes()

    again = extract(chat, session_id, 4)

    assert again.status == "skipped"
    assert len(model.extractions) == 1
    assert user_md(chat).read_bytes() == after
    assert chat.rt.store.path(chat.user.user_id, session_id).read_bytes() == session_file


def test_the_next_run_covers_only_the_new_turns(chat: Chat) -> None:
    model = Model(chat, entries("Likes tables"), entries("Likes tables", "Answer in German"))
    session_id = chat.new_session()
    talk(chat, session_id, "one", "two", "three", "four")
    extract(chat, session_id, 4)
    talk(chat, session_id, "five", "six", "seven", "answer in German")
    assert extract(chat, session_id, 8).status == "saved"
    second = model.extractions[1].messages[1]["content"]
    assert "User: five" in second
    assert "User: four" not in second
    assert "- Likes tables" in second
    assert user_md(chat).read_text() == "- Likes tables\n- Answer in German\n"
    assert marker(chat, session_id) == 8


def test_a_model_error_keeps_the_marker_and_the_sweep_sends_the_job_again(chat: Chat) -> None:
    chat.rt.clock = MovedClock(extraction.LOST_AFTER + timedelta(seconds=1))
    model = Model(chat, error(500, "down"), error(500, "down"), entries("Likes tables"))
    session_id = chat.new_session()
    talk(chat, session_id, "a", "b", "c", "d")
    before = user_md(chat).exists()

    outcome = extract(chat, session_id, 4)

    assert outcome.status == "failed"
    assert "model failed" in outcome.detail
    assert marker(chat, session_id) is None
    assert user_md(chat).exists() == before
    sweeper = RecordingJobs()
    assert sweep_extraction(chat.rt, sweeper) == 1
    assert sweeper.of(job_names.EXTRACT_MEMORY) == [(chat.user.user_id, session_id, 4)]
    assert extract(chat, session_id, 4).status == "saved"
    assert len(model.extractions) == 3  # two tries (one retry) failed, then one succeeded


def test_the_sweep_sends_a_lost_job_once_and_only_when_n_turns_are_due(chat: Chat) -> None:
    Model(chat, entries("Likes tables"))
    session_id = chat.new_session()
    other = chat.new_session()
    talk(chat, session_id, "a", "b", "c", "d", "e")
    talk(chat, other, "a", "b", "c")  # not due yet
    assert len(jobs(chat).of(job_names.EXTRACT_MEMORY)) == 1
    jobs(chat).sent.clear()  # the job was lost with a Redis restart

    sweeper = RecordingJobs()
    assert sweep_extraction(chat.rt, sweeper) == 0  # the last turn is recent: still on its way
    chat.rt.clock = MovedClock(extraction.LOST_AFTER + timedelta(seconds=1))
    assert sweep_extraction(chat.rt, sweeper) == 1
    assert sweeper.of(job_names.EXTRACT_MEMORY) == [(chat.user.user_id, session_id, 5)]
    assert extract(chat, session_id, 5).marker == 5

    sweeper.sent.clear()
    assert sweep_extraction(chat.rt, sweeper) == 0
    assert sweeper.sent == []


def test_the_sweep_leaves_a_running_job_alone_and_resends_a_lost_one_once_a_minute(
    chat: Chat,
) -> None:
    Model(chat, entries("Likes tables"))
    session_id = chat.new_session()
    talk(chat, session_id, "a", "b", "c", "d")
    chat.rt.clock = MovedClock(extraction.LOST_AFTER + timedelta(seconds=1))
    sweeper = RecordingJobs()
    lock = extraction.extract_lock(session_id)
    with chat.rt.locks.hold(lock, ttl=extraction.JOB_LOCK_TTL, keepalive=True):
        assert sweep_extraction(chat.rt, sweeper) == 0  # a worker is on it
    # The worker died (its lock lapsed): the job is sent again, once, not on every sweep.
    assert sweep_extraction(chat.rt, sweeper) == 1
    assert sweep_extraction(chat.rt, sweeper) == 0
    assert sweeper.of(job_names.EXTRACT_MEMORY) == [(chat.user.user_id, session_id, 4)]
    assert chat.rt.redis is not None
    chat.rt.redis.delete(f"eonyx:resent:{job_names.EXTRACT_MEMORY}:{session_id}")  # a minute on
    assert sweep_extraction(chat.rt, sweeper) == 1


def test_the_last_turns_of_a_quiet_session_are_extracted_too(chat: Chat) -> None:
    Model(chat, entries("Likes tables"))
    session_id = chat.new_session()
    talk(chat, session_id, "a", "b", "c", "d", "e", "f")  # extracted through 4; 2 left
    extract(chat, session_id, 4)
    sweeper = RecordingJobs()
    assert sweep_extraction(chat.rt, sweeper) == 0  # still active: wait for N more turns

    chat.rt.clock = MovedClock(extraction.IDLE_AFTER + timedelta(seconds=1))  # quiet now
    assert sweep_extraction(chat.rt, sweeper) == 1
    assert sweeper.of(job_names.EXTRACT_MEMORY) == [(chat.user.user_id, session_id, 6)]
    assert extract(chat, session_id, 6).marker == 6
    assert sweep_extraction(chat.rt, RecordingJobs()) == 0


def memory_files(chat: Chat) -> dict[str, bytes | None]:
    paths = {k: chat.rt.memory.path(k, chat.user.user_id) for k in ("user", "agent")}
    return {k: p.read_bytes() if p.exists() else None for k, p in paths.items()}


def test_temporary_chats_never_trigger_extraction(chat: Chat) -> None:
    model = Model(chat, entries("Learned from a temporary chat"))
    seed_profile(chat, "- Answer in German\n")
    before = memory_files(chat)
    response = chat.client.post(
        f"{API}/sessions", json={"temporary": True}, headers=chat.user.headers
    )
    session_id = response.get_json()["id"]
    talk(chat, session_id, *"abcdefgh")

    assert jobs(chat).sent == []
    assert sweep_extraction(chat.rt, RecordingJobs()) == 0
    assert extract(chat, session_id, 8).status == "skipped"  # even if a job were sent
    assert model.extractions == []
    assert memory_files(chat) == before


@pytest.mark.parametrize(
    "env",
    [
        {"DEMO_MODE": "true"},
        {"USER_MEMORY_EXTRACTION": "false"},
        {"USER_PROFILE_ENABLED": "false"},
    ],
    ids=["demo", "extraction-off", "profile-off"],
)
def test_extraction_never_runs_when_off_or_in_demo_mode(
    make_chat: Callable[..., Chat],  # noqa: F811
    env: dict[str, str],
) -> None:
    chat = make_chat(**(EXTRACTING | env))
    chat.rt.jobs = RecordingJobs()
    model = Model(chat, entries("Something"))
    seed_profile(chat, "- Answer in German\n")
    before = memory_files(chat)
    session_id = chat.new_session()
    talk(chat, session_id, *"abcdefgh")

    assert jobs(chat).sent == []
    assert sweep_extraction(chat.rt, RecordingJobs()) == 0
    assert extract(chat, session_id, 8).status == "skipped"
    assert model.extractions == []
    assert memory_files(chat) == before


def test_the_extraction_role_picks_its_own_model(chat: Chat) -> None:
    model = Model(chat, entries("Likes tables"))
    with chat.rt.db.session() as db:
        from shared.llm import models

        models.add_offering(db, id="small", base_url=chat.llm.base_url, model="small-model")
        models.set_role(db, chat.rt.settings, "user_memory_extraction", "small")
    session_id = chat.new_session()
    talk(chat, session_id, "a", "b", "c", "d")
    extract(chat, session_id, 4)
    assert model.extractions[0].body["model"] == "small-model"
    assert chat.llm.completions[0].body["model"] == "fake-model"


def test_a_celery_worker_runs_the_job_the_turn_sent(
    make_chat: Callable[..., Chat],  # noqa: F811
    backend: Backend,
) -> None:
    """The real path: the turn sends the job through Celery to Redis and a worker (in a
    thread here) runs it. Embedded Redis only: on the shared one, a worker would take other
    test runs' jobs."""
    if backend.name != "embedded":
        pytest.skip("a worker on the shared Redis would take other test runs' jobs")
    from celery.contrib.testing.worker import start_worker

    import workers.tasks  # noqa: F401  (registers the tasks)
    from workers.app import create_celery
    from workers.queue import CeleryJobs

    chat = make_chat(**EXTRACTING)
    celery = create_celery(chat.rt.settings)
    chat.rt.jobs = CeleryJobs(celery)
    model = Model(chat, entries("Answer in German"))
    session_id = chat.new_session()
    try:
        with start_worker(celery, pool="solo", perform_ping_check=False, shutdown_timeout=30):
            talk(chat, session_id, "a", "b", "c", "answer in German")
            deadline = time.monotonic() + 30
            while marker(chat, session_id) != 4:
                assert time.monotonic() < deadline, "the worker did not run the job"
                time.sleep(0.05)
    finally:
        celery.close_runtime()
    assert user_md(chat).read_text() == "- Answer in German\n"
    assert len(model.extractions) == 1
