"""Session titles in each SESSION_TITLE_MODE: truncate, llm (a job names the session from
its opening exchange; every failure keeps the truncated title), sequential; a rename wins."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from shared.accounts import people
from shared.chat import turns
from shared.core.clock import utcnow
from shared.core.job_names import SESSION_TITLE
from shared.sessions import title_job
from shared.sessions.titles import clean_reply
from tests.api.conftest import API, Chat, RecordingJobs, live_events
from tests.conftest import MovedClock, create_account
from tests.fake_llm import RecordedRequest, Reply, error, text

OPENING = "How should I plan a week in Paris in spring, with two kids and a small budget?"
TRUNCATED = "How should I plan a week in Paris in spring, with two kids…"


def llm_chat(make_chat: Callable[..., Chat]) -> Chat:
    chat = make_chat(SESSION_TITLE_MODE="llm")
    chat.rt.jobs = RecordingJobs()  # no worker here: the tests run the job themselves
    return chat


def session(chat: Chat, session_id: str) -> dict[str, Any]:
    response = chat.client.get(f"{API}/sessions/{session_id}", headers=chat.user.headers)
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def title_of(chat: Chat, session_id: str) -> tuple[str | None, bool]:
    item = session(chat, session_id)
    return item["title"], item["title_pending"]


def listed(chat: Chat) -> list[dict[str, Any]]:
    return chat.client.get(f"{API}/sessions", headers=chat.user.headers).get_json()["items"]


def first_exchange(chat: Chat, answer: str = "Start with the Jardin du Luxembourg.") -> str:
    session_id = chat.new_session()
    chat.llm.script(text(answer))
    assert chat.turn(session_id, content=OPENING).status_code == 200
    return session_id


def test_truncate_mode_titles_the_session_with_its_first_message(chat: Chat) -> None:
    session_id = first_exchange(chat)
    assert title_of(chat, session_id) == (TRUNCATED, False)
    chat.turn(session_id, content="And in summer?")
    assert session(chat, session_id)["title"] == TRUNCATED


def test_llm_mode_lists_a_session_as_pending_then_names_it_and_pushes_the_title(
    make_chat: Callable[..., Chat],
) -> None:
    chat = llm_chat(make_chat)
    chat.llm.script(text("Start with the Jardin du Luxembourg."))
    made = chat.client.post(
        f"{API}/sessions/turns", json={"content": OPENING}, headers=chat.user.headers
    )
    assert made.status_code == 201, made.get_json()
    session_id = made.get_json()["session_id"]
    assert [(s["id"], s["title"], s["title_pending"]) for s in listed(chat)] == [
        (session_id, TRUNCATED, True)
    ]
    jobs = chat.rt.jobs
    assert isinstance(jobs, RecordingJobs)
    assert jobs.of(SESSION_TITLE) == [(chat.user.user_id, session_id)]

    chat.llm.script(text('<think>\nThe user wants a trip.\n</think>\n\n**"Paris with kids."**'))
    with live_events(chat) as pushed:
        outcome = title_job.generate_title(chat.rt, chat.user.user_id, session_id)
    assert outcome["written"] is True
    assert title_of(chat, session_id) == ("Paris with kids", False)
    assert pushed == [
        {
            "type": "session.title",
            "session_id": session_id,
            "title": "Paris with kids",
            "title_pending": False,
        }
    ]
    request = chat.llm.requests[-1].messages
    assert request[0]["role"] == "system"
    assert "title" in request[0]["content"]
    assert OPENING in request[1]["content"]
    assert "Jardin du Luxembourg" in request[1]["content"]

    # Done: running the job again (a duplicate, the sweep) changes nothing.
    assert title_job.generate_title(chat.rt, chat.user.user_id, session_id)["written"] is False
    chat.turn(session_id, content="What about museums?")
    assert len(jobs.of(SESSION_TITLE)) == 1
    assert session(chat, session_id)["title"] == "Paris with kids"


@pytest.mark.parametrize(
    "reply",
    [
        error(400, "this model cannot do that"),
        text(""),
        text("<think>I should name it something about Paris"),
        text('""'),
    ],
    ids=["model-error", "empty", "only-reasoning", "only-quotes"],
)
def test_a_failing_title_job_keeps_the_truncated_title_and_ends_pending(
    make_chat: Callable[..., Chat], reply: Reply
) -> None:
    chat = llm_chat(make_chat)
    session_id = first_exchange(chat)
    chat.llm.script(reply)
    with live_events(chat) as pushed:
        outcome = title_job.generate_title(chat.rt, chat.user.user_id, session_id)
    assert outcome["written"] is True
    assert outcome["reason"]
    assert title_of(chat, session_id) == (TRUNCATED, False)
    assert [(e["title"], e["title_pending"]) for e in pushed] == [(TRUNCATED, False)]


@pytest.mark.parametrize("how", ["too-long-for-the-window", "over-the-api-limit-as-a-form"])
def test_a_refused_first_message_leaves_no_title_pending(
    make_chat: Callable[..., Chat], how: str
) -> None:
    """Seen before: after a 413 the session stayed `title_pending` with no message, and every
    client spun on it for good, across reloads. A first message sent to make its session
    leaves nothing when refused; a session made empty on purpose waits for its first message
    without a title pending, and a refusal changes nothing of it. The next first message
    starts a title of its own."""
    chat = make_chat(SESSION_TITLE_MODE="llm", EONYX_LLM_CONTEXT_WINDOW="2000")
    chat.rt.jobs = RecordingJobs()

    def refused(path: str) -> None:
        if how == "too-long-for-the-window":
            answer = chat.client.post(
                path, json={"content": "word " * 2_000}, headers=chat.user.headers
            )
            assert (answer.status_code, answer.get_json()["error"]["code"]) == (
                413,
                "message_too_long",
            )
            return
        answer = chat.client.post(
            path,
            data={"content": "x" * 300_000},
            headers=chat.user.headers,
            content_type="multipart/form-data",
        )
        assert answer.status_code == 400
        assert answer.get_json()["error"]["message"] == (
            "content: longer than maximum length 200000"  # a sentence, not a dict
        )

    with live_events(chat) as pushed:
        refused(f"{API}/sessions/turns")
    assert listed(chat) == []
    session_id = chat.new_session()
    assert title_of(chat, session_id) == (None, False)
    with live_events(chat) as pushed:
        refused(f"{API}/sessions/{session_id}/turns")
    assert title_of(chat, session_id) == (None, False)
    assert pushed == []
    assert [(s["id"], s["title_pending"]) for s in listed(chat)] == [(session_id, False)]

    chat.llm.script(text("Start with the Jardin du Luxembourg."))
    assert chat.turn(session_id, content=OPENING).status_code == 200
    assert title_of(chat, session_id) == (TRUNCATED, True)
    assert chat.rt.jobs.of(SESSION_TITLE) == [(chat.user.user_id, session_id)]  # type: ignore[union-attr]


def test_a_failed_first_reply_ends_pending_at_once(make_chat: Callable[..., Chat]) -> None:
    chat = llm_chat(make_chat)
    session_id = chat.new_session()
    chat.llm.script(error(500, "down"), error(500, "still down"))
    with live_events(chat) as pushed:
        assert chat.turn(session_id, content=OPENING).status_code == 502
    assert title_of(chat, session_id) == (TRUNCATED, False)
    assert [e["title_pending"] for e in pushed if e["type"] == "session.title"] == [False]
    assert chat.rt.jobs.of(SESSION_TITLE) == []  # type: ignore[union-attr]

    # A retry that succeeds later does not bring the spinner back.
    chat.llm.script(text("Here is a plan."))
    assert chat.turn(session_id, retry=True).status_code == 200
    assert title_of(chat, session_id) == (TRUNCATED, False)


def test_a_first_reply_without_text_ends_pending_at_once(make_chat: Callable[..., Chat]) -> None:
    chat = llm_chat(make_chat)
    session_id = first_exchange(chat, answer="")
    assert title_of(chat, session_id) == (TRUNCATED, False)
    assert chat.rt.jobs.of(SESSION_TITLE) == []  # type: ignore[union-attr]


def test_a_stopped_first_reply_ends_pending(make_chat: Callable[..., Chat]) -> None:
    chat = llm_chat(make_chat)
    session_id = chat.new_session()
    principal = people.authenticate(chat.rt.db, chat.rt.tokens, chat.user.token, now=utcnow())
    chat.llm.script(text("A long answer that the user stops early. " * 20, chunk_delay=0.01))
    stream = turns.iter_turn(
        chat.rt, principal, session_id, turns.TurnRequest(content=OPENING), stream=True
    )
    assert isinstance(next(stream), turns.TextDelta)
    stream.close()  # what Flask does when the client goes away
    assert title_of(chat, session_id) == (TRUNCATED, False)
    assert chat.rt.jobs.of(SESSION_TITLE) == []  # type: ignore[union-attr]


def test_without_a_queue_the_truncated_title_stays(make_chat: Callable[..., Chat]) -> None:
    chat = make_chat(SESSION_TITLE_MODE="llm")
    chat.rt.jobs = None
    session_id = first_exchange(chat)
    assert title_of(chat, session_id) == (TRUNCATED, False)


def test_a_rename_wins_against_a_title_job_already_running(
    make_chat: Callable[..., Chat],
) -> None:
    chat = llm_chat(make_chat)
    session_id = first_exchange(chat)
    asked, release = threading.Event(), threading.Event()

    def slow_title(_request: RecordedRequest) -> Reply:
        asked.set()
        release.wait(30)
        return text("The model's title")

    chat.llm.set_default(slow_title)
    outcome: dict[str, Any] = {}
    job = threading.Thread(
        target=lambda: outcome.update(
            title_job.generate_title(chat.rt, chat.user.user_id, session_id)
        )
    )
    with live_events(chat) as pushed:
        job.start()
        assert asked.wait(30), "the title job never called the model"
        renamed = chat.client.patch(
            f"{API}/sessions/{session_id}", json={"title": "Our trip"}, headers=chat.user.headers
        )
        assert renamed.status_code == 200
        release.set()  # the model answers only now, after the rename
        job.join(30)
    assert outcome["written"] is False
    assert title_of(chat, session_id) == ("Our trip", False)
    assert [e for e in pushed if e["type"] == "session.title"] == []

    # Final: neither a late job, nor the sweep, nor a later message changes it.
    chat.llm.set_default(None)
    assert title_job.generate_title(chat.rt, chat.user.user_id, session_id)["written"] is False
    assert session(chat, session_id)["title"] == "Our trip"


def test_a_session_renamed_to_nothing_is_not_titled_by_its_first_message(chat: Chat) -> None:
    session_id = chat.new_session()
    chat.client.patch(
        f"{API}/sessions/{session_id}", json={"title": None}, headers=chat.user.headers
    )
    chat.turn(session_id, content=OPENING)
    assert session(chat, session_id)["title"] is None


def test_the_sweep_resends_a_lost_job_then_gives_up_on_it(make_chat: Callable[..., Chat]) -> None:
    chat = llm_chat(make_chat)
    session_id = first_exchange(chat)
    sweeper = RecordingJobs()
    assert title_job.sweep_titles(chat.rt, sweeper) == {"resent": 0, "ended": 0}  # too soon

    chat.rt.clock = MovedClock(timedelta(seconds=45))
    # A job that runs (its worker alive, renewing the title's lock) is not sent again.
    lock = title_job.title_lock(session_id)
    with chat.rt.locks.hold(lock, ttl=title_job.JOB_LOCK_TTL, keepalive=True):
        assert title_job.sweep_titles(chat.rt, sweeper) == {"resent": 0, "ended": 0}
    # Its worker gone, the job is sent again within the minute, once per sweep window.
    assert title_job.sweep_titles(chat.rt, sweeper) == {"resent": 1, "ended": 0}
    assert title_job.sweep_titles(chat.rt, sweeper) == {"resent": 0, "ended": 0}
    assert sweeper.of(SESSION_TITLE) == [(chat.user.user_id, session_id)]
    assert session(chat, session_id)["title_pending"] is True

    chat.rt.clock = MovedClock(timedelta(minutes=7))
    with live_events(chat) as pushed:
        assert title_job.sweep_titles(chat.rt, sweeper) == {"resent": 0, "ended": 1}
    assert title_of(chat, session_id) == (TRUNCATED, False)
    assert [(e["title"], e["title_pending"]) for e in pushed] == [(TRUNCATED, False)]
    assert title_job.sweep_titles(chat.rt, sweeper) == {"resent": 0, "ended": 0}


def test_sequential_titles_count_per_user(make_chat: Callable[..., Chat]) -> None:
    chat = make_chat(SESSION_TITLE_MODE="sequential")
    other = create_account(chat.rt, "other")

    def create(headers: dict[str, str], **body: object) -> dict[str, Any]:
        response = chat.client.post(f"{API}/sessions", json=body, headers=headers)
        assert response.status_code == 201, response.get_json()
        return response.get_json()

    mine = [create(chat.user.headers)["title"] for _ in range(3)]
    assert mine == ["1", "2", "3"]
    assert create(other.headers)["title"] == "1"
    assert create(chat.user.headers, title="Named")["title"] == "Named"  # takes no number
    assert create(chat.user.headers, temporary=True)["title"] is None
    last = create(chat.user.headers)
    assert last["title"] == "4"
    assert last["title_pending"] is False
    chat.client.delete(f"{API}/sessions/{last['id']}", headers=chat.user.headers)
    assert create(chat.user.headers)["title"] == "5"  # a number is never given twice

    # The title never changes by itself: not with the first message, only by a rename.
    first = create(other.headers)
    chat.llm.script(text("Hello."))
    chat.client.post(
        f"{API}/sessions/{first['id']}/turns", json={"content": OPENING}, headers=other.headers
    )
    got = chat.client.get(f"{API}/sessions/{first['id']}", headers=other.headers).get_json()
    assert got["title"] == "2"


def test_sequential_numbers_are_unique_under_concurrent_creates(
    make_chat: Callable[..., Chat],
) -> None:
    chat = make_chat(SESSION_TITLE_MODE="sequential")
    titles: list[str] = []

    def create() -> None:
        client = chat.app.test_client()
        for _ in range(5):
            response = client.post(f"{API}/sessions", json={}, headers=chat.user.headers)
            titles.append(response.get_json()["title"])

    threads = [threading.Thread(target=create) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(titles, key=int) == [str(n) for n in range(1, 21)]


@pytest.mark.parametrize(
    ("reply", "title"),
    [
        ("<think>hmm</think>\n\n**Fixing a Flask bug**", "Fixing a Flask bug"),
        ("Thinking it over...</think>Garden ideas", "Garden ideas"),
        ('Title: "Paris trip plan."', "Paris trip plan"),
        ("## `Rust` lifetimes\nMore text", "Rust lifetimes"),
        ("«Recette de crêpes»", "Recette de crêpes"),
        ("<think>never ends", None),
        ("  \n ", None),
        ("word " * 40, "word " * 14 + "word…"),
    ],
)
def test_clean_reply(reply: str, title: str | None) -> None:
    assert clean_reply(reply) == title


def test_console_sessions_are_numbered_unless_the_setting_says_otherwise(
    make_chat: Callable[..., Chat],
) -> None:
    """The first spec numbers every new session (1, 2, 3...): so are the sessions of
    `eonyx run` and `eonyx chat` (source `cli`); the others keep truncate; SESSION_TITLE_MODE
    decides for all of them when it is set."""
    chat = make_chat()

    def new(**body: object) -> dict[str, Any]:
        made = chat.client.post(f"{API}/sessions", json=body, headers=chat.user.headers)
        assert made.status_code == 201, made.get_json()
        return made.get_json()

    assert [(s["source"], s["title"]) for s in (new(source="cli"), new(source="cli"))] == [
        ("cli", "1"),
        ("cli", "2"),
    ]
    web = first_exchange(chat)
    assert title_of(chat, web) == (TRUNCATED, False)
    by_source = chat.client.get(f"{API}/sessions?source=cli", headers=chat.user.headers)
    assert [s["title"] for s in by_source.get_json()["items"]] == ["2", "1"]
    refused = chat.client.post(
        f"{API}/sessions", json={"source": "teams"}, headers=chat.user.headers
    )
    assert refused.status_code == 422
    assert refused.get_json()["error"]["message"].startswith("source: must be one of")

    overridden = make_chat(SESSION_TITLE_MODE="truncate")
    made = overridden.client.post(
        f"{API}/sessions", json={"source": "cli"}, headers=overridden.user.headers
    ).get_json()
    assert (made["source"], made["title"]) == ("cli", None)
    overridden.llm.script(text("ok"))
    assert overridden.turn(made["id"], content=OPENING).status_code == 200
    assert title_of(overridden, made["id"]) == (TRUNCATED, False)


def test_a_first_message_in_markdown_titles_the_session_in_plain_text(chat: Chat) -> None:
    """Seen before: `**tea party**` and code fences in the list's provisional titles."""
    session_id = chat.new_session()
    chat.llm.script(text("Lovely."))
    opening = "```\nplan\n```\n**Tea party** at `noon`, [see](https://example.org); 2*3 = 6"
    assert chat.turn(session_id, content=opening).status_code == 200
    assert title_of(chat, session_id) == ("plan Tea party at noon, see; 2*3 = 6", False)
    assert chat.transcript(session_id)[0] == ("user", opening)  # the message is kept as sent


def test_editing_the_first_message_titles_the_session_again(
    make_chat: Callable[..., Chat],
) -> None:
    chat = llm_chat(make_chat)
    jobs = chat.rt.jobs
    assert isinstance(jobs, RecordingJobs)
    session_id = first_exchange(chat)
    chat.llm.script(text("Paris with kids"))
    assert title_job.generate_title(chat.rt, chat.user.user_id, session_id)["written"] is True
    chat.llm.script(text("Take the metro."))
    assert chat.turn(session_id, content="How do we get around?").status_code == 200
    items = chat.client.get(f"{API}/sessions/{session_id}/messages", headers=chat.user.headers)
    first, second = [m for m in items.get_json()["items"] if m["role"] == "user"]

    # Editing a later message keeps the title.
    chat.llm.script(text("By bike."))
    assert chat.turn(session_id, content="And by bike?", edit=second["id"]).status_code == 200
    assert title_of(chat, session_id) == ("Paris with kids", False)
    assert len(jobs.of(SESSION_TITLE)) == 1

    # Editing the first one names the session again, from the new opening exchange.
    chat.llm.script(text("Take the train to Lyon."))
    edited = chat.turn(session_id, content="Plan two days in Lyon by train", edit=first["id"])
    assert edited.status_code == 200, edited.get_json()
    assert title_of(chat, session_id) == ("Plan two days in Lyon by train", True)
    assert jobs.of(SESSION_TITLE) == [(chat.user.user_id, session_id)] * 2
    chat.llm.script(text("Lyon by train"))
    assert title_job.generate_title(chat.rt, chat.user.user_id, session_id)["written"] is True
    assert title_of(chat, session_id) == ("Lyon by train", False)
    assert "Plan two days in Lyon" in chat.llm.requests[-1].messages[1]["content"]
    assert "Paris" not in chat.llm.requests[-1].messages[1]["content"]


@pytest.mark.parametrize("how", ["renamed", "given"])
def test_editing_the_first_message_keeps_a_title_the_user_chose(
    make_chat: Callable[..., Chat], how: str
) -> None:
    chat = llm_chat(make_chat)
    headers = chat.user.headers
    if how == "given":  # a title given when the chat was made
        made = chat.client.post(f"{API}/sessions", json={"title": "Trip"}, headers=headers)
        session_id = made.get_json()["id"]
        chat.llm.script(text("Start with the Jardin du Luxembourg."))
        assert chat.turn(session_id, content=OPENING).status_code == 200
    else:
        session_id = first_exchange(chat)
        renamed = chat.client.patch(
            f"{API}/sessions/{session_id}", json={"title": "Trip"}, headers=headers
        )
        assert renamed.status_code == 200
    items = chat.client.get(f"{API}/sessions/{session_id}/messages", headers=headers)
    first = items.get_json()["items"][0]

    chat.llm.script(text("Lyon it is."))
    assert chat.turn(session_id, content="Lyon instead?", edit=first["id"]).status_code == 200

    assert title_of(chat, session_id) == ("Trip", False)
