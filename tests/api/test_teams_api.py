"""The Teams bot endpoint against a fake Bot Framework on loopback (tests/fake_botframework.py).

The endpoint only checks and queues; the turn runs in a worker. Here the job queue runs the
Teams job in a thread of the test process through the same domain function the Celery task
calls (`shared.integrations.teams.bot.answer`), so replies arrive at the fake connector.
"""

from __future__ import annotations

import base64
import json
import multiprocessing
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt
import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import func, select

from api.app import create_app
from api.context import runtime_of
from shared.accounts import people
from shared.core.job_names import TEAMS_TURN
from shared.core.settings import Settings
from shared.db.orm import SessionBinding, TeamsUserLink, User
from shared.integrations.teams import activities, bot, links
from shared.integrations.teams.activities import MAX_TEXT_BYTES
from shared.integrations.teams.bot import answer
from shared.runtime import Runtime
from tests.conftest import Account, Backend, create_account, make_settings, wait_for
from tests.fake_botframework import (
    APP_ID,
    APP_PASSWORD,
    USER_AAD_ID,
    FakeBotFramework,
    fake_botframework,
    new_key,
)
from tests.fake_llm import FakeLLM, error, text

__all__ = ["fake_botframework"]
ENDPOINT = "/integrations/teams/messages"


class ThreadJobs:
    """A job queue running Teams turns in background threads of this process (the worker's
    domain function, without a Celery worker); other jobs are only recorded."""

    def __init__(self) -> None:
        self.rt: Runtime | None = None
        self.sent: list[tuple[Any, ...]] = []
        self.results: list[dict[str, object]] = []
        self.errors: list[BaseException] = []
        self.threads: list[threading.Thread] = []

    def enqueue(self, job: str, *args: Any) -> str:
        self.sent.append((job, *args))
        if job == TEAMS_TURN:
            thread = threading.Thread(target=self._run, args=args)
            thread.start()
            self.threads.append(thread)
        return f"job-{len(self.sent)}"

    def status(self, job_id: str) -> dict[str, object]:
        return {"id": job_id, "state": "PENDING", "result": None, "error": None}

    def _run(self, inbound: dict[str, object]) -> None:
        assert self.rt is not None
        try:
            self.results.append(answer(self.rt, inbound))
        except BaseException as exc:  # noqa: BLE001 - reported by join()
            self.errors.append(exc)

    def join(self) -> list[dict[str, object]]:
        for thread in self.threads:
            thread.join(timeout=60)
        assert not self.errors, self.errors
        return self.results

    def turns(self) -> list[tuple[Any, ...]]:
        return [s for s in self.sent if s[0] == TEAMS_TURN]


@dataclass
class Teams:
    app: Flask
    client: FlaskClient
    rt: Runtime
    bf: FakeBotFramework
    jobs: ThreadJobs
    llm: FakeLLM
    user: Account

    def post(self, activity: Any, token: str | None = "sign", **headers: str):
        if token == "sign":
            token = self.bf.sign()
        if token is not None:
            headers.setdefault("Authorization", f"Bearer {token}")
        data = activity if isinstance(activity, (str, bytes)) else json.dumps(activity)
        return self.client.post(
            ENDPOINT, data=data, headers=headers, content_type="application/json"
        )

    def say(self, text: str, **options: Any) -> dict[str, Any]:
        activity = self.bf.activity(text, **options)
        response = self.post(activity)
        assert response.status_code == 202, response.get_data(as_text=True)
        return activity

    def sessions(self) -> list[dict[str, Any]]:
        response = self.client.get("/api/v1/sessions", headers=self.user.headers)
        return response.get_json()["items"]

    def messages(self, session_id: str) -> list[tuple[str, Any]]:
        items = self.client.get(
            f"/api/v1/sessions/{session_id}/messages", headers=self.user.headers
        ).get_json()["items"]
        return [(m["role"], m["content"]) for m in items]

    def nothing_saved(self) -> None:
        """No job queued, nothing posted, no session, binding or new link or user."""
        self.jobs.join()
        assert self.jobs.sent == []
        assert self.bf.posts == []
        assert self.bf.connector_attempts == []
        assert not list(self.rt.settings.data_dir.glob("users/*/sessions/*.jsonl"))
        with self.rt.db.session() as db:
            assert db.scalar(select(func.count()).select_from(SessionBinding)) == 0
            assert db.scalar(select(func.count()).select_from(TeamsUserLink)) == 1
            assert db.scalar(select(func.count()).select_from(User)) == 1


@pytest.fixture
def make_teams(
    tmp_path: Path, backend: Backend, fake_llm: FakeLLM, fake_botframework: FakeBotFramework
) -> Iterator[Callable[..., Teams]]:
    apps: list[Flask] = []

    def build(**env: str) -> Teams:
        values = {
            "EONYX_LLM_BASE_URL": fake_llm.base_url,
            "EONYX_LLM_MODEL": "fake-model",
            "LLM_MAX_RETRIES": "1",
            **fake_botframework.settings_env,
        } | env
        settings = make_settings(tmp_path / f"data{len(apps)}", backend, **values)
        jobs = ThreadJobs()
        app = create_app(settings, jobs_queue=jobs)
        apps.append(app)
        rt = runtime_of(app)
        jobs.rt = rt
        rt.db.migrate()
        assert rt.teams is not None
        rt.teams.connector.backoff = 0.01
        user = create_account(rt, "ada")
        with rt.db.session() as db:
            links.link(db, "ada", USER_AAD_ID)
        return Teams(app, app.test_client(), rt, fake_botframework, jobs, fake_llm, user)

    yield build
    for app in apps:
        runtime_of(app).close()


@pytest.fixture
def teams(make_teams: Callable[..., Teams]) -> Iterator[Teams]:
    bot = make_teams()
    yield bot
    bot.jobs.join()


# --- answering -------------------------------------------------------------------------------


def test_a_signed_message_is_answered_in_its_conversation(teams: Teams) -> None:
    activity = teams.say("What is Eonyx?", conversation_id="a:1-chat-with-ada")
    reply = teams.bf.wait_for_replies(1)[0]
    assert reply.conversation_id == "a:1-chat-with-ada"
    assert reply.reply_to == activity["id"]
    assert reply.text == "What is Eonyx?"  # the fake model echoes
    assert reply.activity["replyToId"] == activity["id"]
    assert reply.activity["from"]["id"] == activity["recipient"]["id"]
    assert reply.activity["recipient"]["id"] == activity["from"]["id"]
    # with a bot token from the client-credentials flow
    assert teams.bf.token_requests == [
        {
            "grant_type": "client_credentials",
            "client_id": APP_ID,
            "client_secret": APP_PASSWORD,
            "scope": "https://api.botframework.com/.default",
        }
    ]
    # "typing..." was shown while the turn ran
    kinds = [post.type for post in teams.bf.posts]
    assert kinds.index("typing") < kinds.index("message")
    assert teams.jobs.join()[0]["outcome"] == "answered"


def test_one_conversation_is_one_session_with_source_teams(teams: Teams) -> None:
    teams.say("My name is Ada.", conversation_id="a:1-first")
    teams.bf.wait_for_replies(1)
    teams.say("What is my name?", conversation_id="a:1-first")
    teams.bf.wait_for_replies(2)
    # the model saw the first exchange with the second message
    sent = [m["content"] for m in teams.llm.completions[-1].messages if m["role"] == "user"]
    assert sent == ["My name is Ada.", "What is my name?"]
    teams.say("Another chat.", conversation_id="a:1-second")
    teams.bf.wait_for_replies(3)
    teams.jobs.join()

    sessions = teams.sessions()
    assert len(sessions) == 2
    assert {s["source"] for s in sessions} == {"teams"}
    by_count = {s["message_count"]: s["id"] for s in sessions}
    assert set(by_count) == {4, 2}
    assert teams.messages(by_count[4])[0] == ("user", "My name is Ada.")


def test_new_starts_another_session_for_the_conversation(teams: Teams) -> None:
    teams.say("First topic.")
    teams.bf.wait_for_replies(1)
    teams.say("new")
    assert "new session" in teams.bf.wait_for_replies(2)[1].text
    teams.say("Second topic.")
    teams.bf.wait_for_replies(3)
    teams.jobs.join()
    sessions = teams.sessions()
    assert len(sessions) == 2
    assert sorted(s["message_count"] for s in sessions) == [2, 2]


def test_a_conversation_whose_session_was_purged_goes_on_in_one_new_session(
    teams: Teams,
) -> None:
    teams.say("First topic.")
    teams.bf.wait_for_replies(1)
    teams.jobs.join()
    (gone,) = teams.sessions()
    response = teams.client.delete(
        f"/api/v1/sessions/{gone['id']}?purge=true", headers=teams.user.headers
    )
    assert response.status_code == 204
    teams.say("Starting over.")
    teams.bf.wait_for_replies(2)
    teams.jobs.join()
    teams.say("And going on.")  # the binding now names the new session, not the purged one
    teams.bf.wait_for_replies(3)
    teams.jobs.join()
    (session,) = teams.sessions()
    assert session["id"] != gone["id"]
    assert [text for role, text in teams.messages(session["id"]) if role == "user"] == [
        "Starting over.",
        "And going on.",
    ]


def test_a_mention_of_the_bot_is_not_part_of_the_message(teams: Teams) -> None:
    mention = {
        "type": "mention",
        "text": "<at>Eonyx</at>",
        "mentioned": {"id": f"28:{APP_ID}", "name": "Eonyx"},
    }
    teams.say("<at>Eonyx</at> summarise the thread", entities=[mention])
    assert teams.bf.wait_for_replies(1)[0].text == "summarise the thread"


def test_long_answers_are_split_to_fit_teams(teams: Teams) -> None:
    paragraph = "Eonyx keeps every session as an append-only file. " * 40
    long_answer = "\n\n".join([paragraph.strip()] * 30)  # ~61,000 characters
    teams.llm.script(text(long_answer))
    teams.say("Tell me everything.")
    teams.jobs.join()
    replies = teams.bf.replies()
    assert len(replies) >= 3
    assert all(len(r.text.encode()) <= MAX_TEXT_BYTES for r in replies)
    assert "\n\n".join(r.text for r in replies) == long_answer


# --- users -----------------------------------------------------------------------------------


def test_a_model_failure_is_told_without_the_providers_words(teams: Teams) -> None:
    teams.llm.script(error(401, "Incorrect API key provided: sk-live-****7f3a"))
    teams.say("hello?")
    [reply] = teams.bf.wait_for_replies(1)
    assert reply.text.startswith(
        "Sorry, I could not answer that: model offering 'default' refused the request (HTTP 401)"
    )
    assert "sk-live" not in reply.text
    assert "Incorrect API key" not in reply.text
    assert teams.jobs.join()[0]["outcome"] == "failed"


def _answer_in_a_worker(settings: Settings, inbound: dict[str, object]) -> None:
    """A worker process of its own, for the test below to kill mid-turn."""
    answer(Runtime.build(settings), inbound)


@pytest.mark.slow
def test_a_message_whose_worker_died_mid_turn_is_answered_once(teams: Teams) -> None:
    """The queue delivers a job again when its worker dies (acks_late): the new delivery
    answers the message the dead worker saved, instead of skipping it as a duplicate (the
    user got no answer) or saving it twice; a third delivery is a duplicate."""
    activity = teams.bf.activity("Answer me though my worker dies")
    inbound = activities.inbound_message(activities.parse(json.dumps(activity).encode()))
    assert inbound is not None
    teams.llm.script(text("never sent", delay=600))  # held until the worker is killed
    worker = multiprocessing.get_context("spawn").Process(
        target=_answer_in_a_worker, args=(teams.rt.settings, inbound.to_dict())
    )
    worker.start()
    wait_for(lambda: teams.llm.completions, 60, "the dead worker's turn to reach the model")
    worker.kill()
    worker.join(10)
    [session] = teams.sessions()
    assert teams.messages(session["id"]) == [("user", "Answer me though my worker dies")]

    assert answer(teams.rt, inbound.to_dict())["outcome"] == "answered"  # delivered again
    assert teams.messages(session["id"]) == [
        ("user", "Answer me though my worker dies"),
        ("assistant", "Answer me though my worker dies"),
    ]
    assert [reply.text for reply in teams.bf.replies()] == ["Answer me though my worker dies"]
    assert answer(teams.rt, inbound.to_dict())["outcome"] == "duplicate"
    assert len(teams.bf.replies()) == 1


def test_an_unknown_teams_user_is_told_how_to_link(teams: Teams) -> None:
    stranger = "0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9"
    teams.say("hello", aad_object_id=stranger)
    reply = teams.bf.wait_for_replies(1)[0]
    assert f"eonyx users link YOUR-USERNAME --teams-aad-id {stranger}" in reply.text
    teams.jobs.join()
    assert teams.llm.completions == []
    assert not list(teams.rt.settings.data_dir.glob("users/*/sessions/*.jsonl"))


def test_a_disabled_account_is_told_so_and_nothing_runs(teams: Teams) -> None:
    with teams.rt.db.session() as db:
        people.update_user(db, teams.user.user_id, disabled=True)
    teams.say("hello")
    assert teams.bf.wait_for_replies(1)[0].text == bot.DISABLED_REPLY
    assert teams.jobs.join()[0]["outcome"] == "disabled"
    assert teams.llm.completions == []
    assert not list(teams.rt.settings.data_dir.glob("users/*/sessions/*.jsonl"))


def test_auto_provision_gives_an_unknown_user_an_account(make_teams: Callable[..., Teams]) -> None:
    teams = make_teams(TEAMS_AUTO_PROVISION="true")
    stranger = "0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9"
    teams.say("hello there", aad_object_id=stranger)
    assert teams.bf.wait_for_replies(1)[0].text == "hello there"
    teams.jobs.join()
    with teams.rt.db.session() as db:
        user = links.linked_user(db, stranger)
        assert user is not None
        assert user.username == "teams-ada-lovelace"
    sessions = list(teams.rt.settings.data_dir.glob(f"users/{user.id}/sessions/*.jsonl"))
    assert len(sessions) == 1


# --- the connector -----------------------------------------------------------------------------


def test_a_throttled_reply_is_retried_after_retry_after(teams: Teams) -> None:
    teams.bf.fail_next(429, {"Retry-After": "1"})
    activity = teams.say("hello")
    assert teams.bf.wait_for_replies(1)[0].text == "hello"
    attempts = [at for path, at in teams.bf.connector_attempts if path.endswith(activity["id"])]
    assert len(attempts) == 2
    assert attempts[1] - attempts[0] >= 0.95  # Retry-After was honoured


def test_a_failing_connector_is_retried(teams: Teams) -> None:
    teams.bf.fail_next(503)
    teams.bf.fail_next(502)
    activity = teams.say("hello")
    assert teams.bf.wait_for_replies(1)[0].text == "hello"
    attempts = [path for path, _ in teams.bf.connector_attempts if path.endswith(activity["id"])]
    assert len(attempts) == 3


# --- the checks --------------------------------------------------------------------------------


def _tampered(bf: FakeBotFramework) -> tuple[str, str]:
    """A valid token whose claims were edited after signing (to vouch for another host)."""
    header, payload, signature = bf.sign().split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims["serviceurl"] = "https://attacker.example/"
    edited = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return f"{header}.{edited}.{signature}", "https://attacker.example/"


def _unsigned(bf: FakeBotFramework) -> str:
    claims = jwt.decode(bf.sign(), options={"verify_signature": False})
    return jwt.encode(claims, None, algorithm="none")


REJECTED: dict[str, Callable[[FakeBotFramework], tuple[str | None, str | None]]] = {
    "missing token": lambda bf: (None, None),
    "wrong audience": lambda bf: (bf.sign(audience="another-bot"), None),
    "expired token": lambda bf: (bf.sign(expires_in=-3600), None),
    "unknown key": lambda bf: (bf.sign(key=new_key(), kid="not-published"), None),
    "known key id, other key": lambda bf: (bf.sign(key=new_key()), None),
    "tampered token": _tampered,
    "mismatched serviceUrl": lambda bf: (bf.sign(), "https://attacker.example/"),
    "wrong issuer": lambda bf: (bf.sign(issuer="https://issuer.example"), None),
    "unsigned token": lambda bf: (_unsigned(bf), None),
    "not a JWT": lambda bf: ("not-a-jwt", None),
}


@pytest.mark.parametrize("case", REJECTED)
def test_an_invalid_activity_is_401_and_leaves_nothing(teams: Teams, case: str) -> None:
    token, service_url = REJECTED[case](teams.bf)
    response = teams.post(teams.bf.activity("hello", service_url=service_url), token=token)
    assert response.status_code == 401, response.get_data(as_text=True)
    assert response.get_json()["error"]["code"] in ("missing_token", "invalid_token")
    teams.nothing_saved()


@pytest.mark.parametrize(
    "body",
    [
        "this is not JSON",
        "[1, 2]",
        json.dumps({"type": 5, "serviceUrl": "x"}),
        json.dumps({"text": "no type"}),
        '{"type": "message", "channelData": ' + "[" * 100_000 + "]" * 100_000 + "}",
        '{"type": "message", "channelData": {"n": ' + "7" * 4301 + "}}",
        '{"type": "message", "channelData": {"n": NaN}}',
    ],
    ids=[
        "not JSON",
        "not an object",
        "type not a string",
        "no type",
        "deep JSON",
        "a 4301-digit integer",
        "NaN",
    ],
)
def test_a_malformed_activity_is_400_and_leaves_nothing(teams: Teams, body: str) -> None:
    response = teams.post(body)
    assert response.status_code == 400, response.get_data(as_text=True)
    assert response.get_json()["error"]["code"] == "invalid_activity"
    teams.nothing_saved()


def test_a_message_without_a_conversation_is_400(teams: Teams) -> None:
    activity = teams.bf.activity("hello")
    del activity["conversation"]
    response = teams.post(activity)
    assert response.status_code == 400
    assert "conversation.id" in response.get_json()["error"]["message"]
    teams.nothing_saved()


def test_a_rotated_signing_key_is_fetched_when_first_seen(teams: Teams) -> None:
    teams.say("with the first key")
    assert teams.bf.jwks_fetches == 1
    assert teams.rt.teams is not None
    teams.rt.teams.verifier.jwks_cooldown = 0  # the key appears right after the first fetch
    kid = teams.bf.publish()
    response = teams.post(teams.bf.activity("with the new key"), token=teams.bf.sign(kid=kid))
    assert response.status_code == 202
    assert teams.bf.jwks_fetches == 2
    teams.say("cached again")
    assert teams.bf.jwks_fetches == 2


@pytest.mark.parametrize(
    ("endorsements", "channel", "status"),
    [
        (("msteams",), "msteams", 202),
        (("msteams", "webchat"), "msteams:COPILOT", 202),  # a sub-channel of Teams
        (None, "msteams", 202),  # a key listing no endorsements: not checked (as the SDKs)
        (("webchat",), "msteams", 401),  # a key issued for another channel
        (("msteams",), "webchat", 401),  # an activity claiming another channel
        (("msteams",), None, 401),  # one claiming none
    ],
    ids=["endorsed", "sub-channel", "no endorsements", "other key", "other channel", "none"],
)
def test_the_signing_key_must_endorse_the_activitys_channel(
    teams: Teams, endorsements: tuple[str, ...] | None, channel: str | None, status: int
) -> None:
    """As the Bot Framework's own authentication: a key's JWKS entry lists the channels it
    signs for, and the activity's channelId must be one of them."""
    kid = teams.bf.publish(endorsements=endorsements)  # before the first fetch of the keys
    activity = teams.bf.activity("hello", channelId=channel)
    response = teams.post(activity, token=teams.bf.sign(kid=kid))
    assert response.status_code == status, response.get_data(as_text=True)
    if status == 202:
        assert teams.jobs.join()[0]["outcome"] == "answered"
        assert [p.text for p in teams.bf.wait_for_replies(1)] == ["hello"]  # the model echoes
    else:
        error = response.get_json()["error"]
        assert error["code"] == "invalid_token"
        assert "endorse" in error["message"]
        teams.nothing_saved()


def test_activities_without_a_message_are_acknowledged_without_a_turn(teams: Teams) -> None:
    update = teams.bf.activity("", type="conversationUpdate", membersAdded=[{"id": "29:1"}])
    assert teams.post(update).status_code == 202
    teams.nothing_saved()


def test_a_single_tenant_bot_refuses_other_tenants(make_teams: Callable[..., Teams]) -> None:
    teams = make_teams(TEAMS_TENANT_ID="tenant-2")
    response = teams.post(teams.bf.activity("hello"))  # from tenant-1
    assert response.status_code == 403
    teams.nothing_saved()


def test_the_endpoint_is_off_without_an_app_id(client: FlaskClient) -> None:
    response = client.post(ENDPOINT, json={"type": "message"})
    assert response.status_code == 404
    assert "TEAMS_APP_ID" in response.get_json()["error"]["message"]
