"""aider 0.86.2 pointed at Eonyx as its users point it at any OpenAI-compatible server
(`--model openai/<offering> --openai-api-base <eonyx>/v1`), quiet and offline, with the fake
model behind Eonyx. aider appends a reminder to the current question and resends the
question without it next time; for models named like gpt-4o it sends the reminder as a
trailing system message instead. Either way one aider run is one Eonyx session (issue 41).

What aider sent is read from its own log (`--llm-history-file`), what reached the model from
the fake model's log, and the sessions from Eonyx's API."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from shared.llm import models
from tests import programs
from tests.api.conftest import Facade, make_facade
from tests.fake_llm import RecordedRequest, Reply, last_user_text, text

__all__ = ["make_facade"]  # the fixture, for this module

pytestmark = [
    pytest.mark.slow,
    pytest.mark.parametrize("backend", ["embedded"], indirect=True),  # a program, not a store
]
TIMEOUT = 60  # seconds for one aider run: a few turns against loopback
SOURCE = 'def greet(name):\n    return f"Hello, {name}"\n'
QUIET = (
    "--no-git",
    "--yes-always",
    "--no-check-update",
    "--analytics-disable",
    "--no-show-model-warnings",
    "--no-show-release-notes",
    "--no-pretty",
    "--no-fancy-input",
    "--no-restore-chat-history",
    "--map-tokens=0",
)
# What aider would otherwise download from GitHub: the models' sizes and prices.
METADATA = {"max_input_tokens": 128000, "max_output_tokens": 4096, "litellm_provider": "openai",
            "mode": "chat", "input_cost_per_token": 0, "output_cost_per_token": 0}  # fmt: skip

Message = tuple[str, str]  # (role, content)


@dataclass
class Run:
    printed: str  # what aider printed, with its exit status: a failed assertion shows it
    sent: list[list[Message]]  # what aider sent, request by request (its own log)


def aider(
    facade: Facade, root: Path, offering: str, questions: list[str], *, stream: bool = False
) -> Run:
    """One aider run in `root/work` with greet.py in the chat, one question a line on its
    stdin. HOME is `root/home`, so no settings of the machine's user reach it."""
    command = programs.ensure(programs.AIDER)
    work, home = root / "work", root / "home"
    work.mkdir(parents=True)
    home.mkdir()
    (work / "greet.py").write_text(SOURCE)
    model = f"openai/{offering}"
    (home / "metadata.json").write_text(json.dumps({model: METADATA}))
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "TERM": "dumb",
        # a dead proxy for all but loopback: whatever else aider would fetch fails at once
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "HTTP_PROXY": "http://127.0.0.1:9",
        "NO_PROXY": "127.0.0.1",
    }
    args = [
        str(command),
        f"--model={model}",
        f"--weak-model={model}",  # its summaries go through Eonyx too
        f"--openai-api-base={facade.url}/v1",
        f"--openai-api-key={facade.user.token}",
        f"--model-metadata-file={home / 'metadata.json'}",
        f"--llm-history-file={root / 'llm.txt'}",
        "--stream" if stream else "--no-stream",
        *QUIET,
        "greet.py",
    ]
    done = subprocess.run(
        args,
        input="".join(f"{q}\n" for q in questions),
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    printed = (
        f"aider exited {done.returncode}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
    )
    assert done.returncode == 0, printed
    log = root / "llm.txt"
    return Run(printed, sent_by_aider(log.read_text() if log.exists() else ""))


def sent_by_aider(log: str) -> list[list[Message]]:
    """The requests in aider's LLM history: after each "TO LLM" line, messages separated by
    "-------", each line of one prefixed with its role in capitals."""
    requests: list[list[list[str]]] = []
    reading = False
    for line in log.splitlines():
        if line.startswith("TO LLM "):
            requests.append([])
            reading = True
        elif line.startswith("LLM RESPONSE "):
            reading = False
        elif reading and line == "-------":
            requests[-1].append([])
        elif reading and requests[-1]:
            requests[-1][-1].append(line)
    return [[_message(lines) for lines in request] for request in requests]


def _message(lines: list[str]) -> Message:
    role = lines[0].partition(" ")[0] if lines else ""
    return role.lower(), "\n".join(line[len(role) + 1 :] for line in lines).strip()


def answer(request: RecordedRequest) -> Reply:
    """What the fake model says: plain text naming the question (no edit block, which
    aider would try to apply)."""
    return text(f"Answer to: {last_user_text(request.body).splitlines()[0]}")


def said(facade: Facade) -> list[list[Message]]:
    """Each of the user's sessions as (role, first line) of its messages."""
    return [
        [(role, str(content).splitlines()[0]) for role, content in facade.transcript(s["id"])]
        for s in facade.sessions()
    ]


def exchanges(questions: list[str]) -> list[Message]:
    return [pair for q in questions for pair in (("user", q), ("assistant", f"Answer to: {q}"))]


def instructions(request: list[Message]) -> str:
    return "\n\n".join(content for role, content in request if role == "system")


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_three_turns_of_one_aider_run_are_one_session(
    make_facade: Callable[..., Facade], tmp_path: Path, stream: bool
) -> None:
    facade = make_facade()
    facade.llm.set_default(answer)
    questions = ["What does greet do?", "Name its argument.", "Is it pure?"]
    run = aider(facade, tmp_path, "default", questions, stream=stream)
    first, second, third = run.sent
    # aider's reminder rides on the question asked, and is gone when the question is resent
    assert first[-1][1].startswith(questions[0])
    assert first[-1][1] != questions[0]
    assert ("user", questions[0]) in second
    assert ("user", questions[1]) in third
    turns = facade.llm.completions
    assert len(turns) == 3, run.printed
    for question, sent, turn in zip(questions, run.sent, turns, strict=True):
        assert turn.messages[0]["content"].endswith(instructions(sent))  # aider's prompt
        assert any(SOURCE in str(m["content"]) for m in turn.messages)  # the file in the chat
        assert last_user_text(turn.body).strip() == sent[-1][1]  # with its reminder
        assert f"Answer to: {question}" in run.printed  # the model's answer, shown by aider
    [session] = said(facade)
    assert session[-6:] == exchanges(questions), run.printed  # after aider's examples, file
    assert [m for m in session if m[1] in questions] == [("user", q) for q in questions]


def test_two_aider_runs_are_two_sessions(
    make_facade: Callable[..., Facade], tmp_path: Path
) -> None:
    facade = make_facade()
    facade.llm.set_default(answer)
    runs = [["What does greet do?", "Name its argument."], ["Is it pure?", "Add a docstring?"]]
    for n, questions in enumerate(runs):
        aider(facade, tmp_path / f"run{n}", "default", questions)
    sessions = said(facade)
    assert sorted(session[-4:] for session in sessions) == sorted(map(exchanges, runs))


def test_a_gpt_4o_offering_takes_aiders_reminder_as_a_system_message(
    make_facade: Callable[..., Facade], tmp_path: Path
) -> None:
    """For models named like gpt-4o aider sends its reminder as a trailing system message,
    which OpenAI takes as an instruction for the turn; so does Eonyx."""
    facade = make_facade()
    with facade.rt.db.session() as db:
        models.add_offering(
            db, id="gpt-4o", base_url=facade.llm.base_url, model="fake-model",
            context_window=128000,
        )  # fmt: skip
    facade.llm.set_default(answer)
    questions = ["What does greet do?", "Name its argument."]
    run = aider(facade, tmp_path, "gpt-4o", questions)
    turns = facade.llm.completions
    assert len(turns) == 2, run.printed
    for question, sent, turn in zip(questions, run.sent, turns, strict=True):
        role, reminder = sent[-1]
        assert role == "system"
        assert "SEARCH/REPLACE" in reminder
        prompt = turn.messages[0]["content"]
        assert prompt.endswith(instructions(sent))  # aider's prompt, then the reminder
        assert prompt.endswith(f"\n\n{reminder}")
        assert last_user_text(turn.body) == question  # the question alone is the turn
        assert f"Answer to: {question}" in run.printed
    [session] = said(facade)
    assert session[-4:] == exchanges(questions), run.printed
