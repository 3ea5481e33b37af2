"""`eonyx run` against a live server on loopback whose app is wired to the fake model
(tests/cli/conftest.py)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import Result

import cli.run as run_module
from cli.command import main
from shared.core.text import printable
from shared.llm.tools import Tool
from tests.cli.conftest import Live
from tests.fake_llm import broken_stream, error, fake_llm, text, tool_call, tool_calls

__all__ = ["fake_llm"]
ANSI = re.compile(r"\x1b\[[0-9;]*m")
YELLOW_BOLD = click.style("x", fg="yellow", bold=True).split("x")[0]
RED_BOLD = click.style("x", fg="red", bold=True).split("x")[0]


def session_of(result: Result) -> str:
    found = re.search(r"session (\d{8}T\d{6}-[0-9a-f]{8})", result.output)
    assert found, result.output
    return found.group(1)


def test_login_then_run_starts_a_new_session_each_time(live: Live) -> None:
    live.runner.env["EONYX_TOKEN"] = None
    login = live.runner.invoke(main, ["login"], input=f"{live.user.username}\ncorrect horse\n")
    assert login.exit_code == 0, login.output

    live.llm.script(text("Hello, Ada."))
    first = live.run("Hi, I am Ada")
    assert first.exit_code == 0, first.output
    assert first.stdout == "Hello, Ada.\n"  # the answer alone on stdout
    first_id = session_of(first)
    assert f"eonyx run -s {first_id}" in first.stderr
    assert "{ctx" not in first.output  # no context window configured: no gauge

    second = live.run("Another topic")
    assert second.exit_code == 0, second.output
    second_id = session_of(second)
    assert second_id != first_id
    assert set(live.session_ids()) == {first_id, second_id}
    assert live.transcript(first_id) == [("user", "Hi, I am Ada"), ("assistant", "Hello, Ada.")]
    # Made by a console client: source cli (seen before: web), numbered as the first spec says.
    made = [live.api("GET", f"/sessions/{i}") for i in (first_id, second_id)]
    assert [(s["source"], s["title"]) for s in made] == [("cli", "1"), ("cli", "2")]
    by_source = live.api("GET", "/sessions", params={"source": "cli"})["items"]
    assert {s["id"] for s in by_source} == {first_id, second_id}
    assert live.llm.completions[-1].messages[1:] == [{"role": "user", "content": "Another topic"}]


def test_continue_takes_the_most_recently_updated_session_not_a_pinned_one(live: Live) -> None:
    live.llm.script(text("Noted: blue."), text("Unrelated answer."))
    old = session_of(live.run("My favourite colour is blue"))
    live.api("PATCH", f"/sessions/{old}", json={"pinned": True})
    recent = session_of(live.run("Unrelated question"))
    assert live.session_ids()[0] == old  # the listing puts the pinned session first

    live.llm.script(text("You asked an unrelated question."))
    result = live.run("-c", "What did I just ask?")
    assert result.exit_code == 0, result.output
    assert session_of(result) == recent
    assert live.llm.completions[-1].messages[1:] == [
        {"role": "user", "content": "Unrelated question"},
        {"role": "assistant", "content": "Unrelated answer."},
        {"role": "user", "content": "What did I just ask?"},
    ]

    # Once the pinned session is the one updated last, -c continues it.
    live.run("-s", old, "and green too")
    live.run("-c", "which colours?")
    assert [c for r, c in live.transcript(old) if r == "user"] == [
        "My favourite colour is blue",
        "and green too",
        "which colours?",
    ]


def test_a_refused_message_prints_the_servers_reason(live: Live) -> None:
    result = live.run("-", input="x" * 300_000)
    assert result.exit_code == 1
    assert "content: longer than maximum length 200000 (invalid_request)" in result.output


def test_continue_with_no_session_is_an_error(live: Live) -> None:
    result = live.run("-c", "hello")
    assert result.exit_code == 1
    assert "no session to continue" in result.output


def test_session_flag_continues_a_given_session_and_reads_stdin(live: Live) -> None:
    live.llm.script(text("The code word is kiwi."))
    first = session_of(live.run("Remember the code word kiwi"))
    live.run("Some other session")

    live.llm.script(text("kiwi"))
    result = live.run("-s", first, input="What is the code word?\n")
    assert result.exit_code == 0, result.output
    assert result.stdout == "kiwi\n"
    assert live.llm.completions[-1].messages[1:] == [
        {"role": "user", "content": "Remember the code word kiwi"},
        {"role": "assistant", "content": "The code word is kiwi."},
        {"role": "user", "content": "What is the code word?\n"},
    ]
    dash = live.run("-s", first, "-", input="from a pipe")
    assert dash.exit_code == 0
    assert live.transcript(first)[-2] == ("user", "from a pipe")

    assert live.run("-s", "20990101T000000-deadbeef", "hi").exit_code == 1
    assert live.run(input="   \n").exit_code == 2  # an empty message is a usage error
    assert live.run("-c", "-s", first, "x").exit_code == 2


def make_project(root: Path, config: dict[str, Any]) -> Path:
    """project/{eonyx.json, AGENTS.md, services/billing/AGENTS.md}; returns the billing dir."""
    billing = root / "project" / "services" / "billing"
    billing.mkdir(parents=True)
    (root / "project" / "eonyx.json").write_text(json.dumps(config))
    (root / "project" / "AGENTS.md").write_text("Stack: Go and PostgreSQL.")
    (billing / "AGENTS.md").write_text("Billing: amounts are integer cents.")
    (root / "AGENTS.md").write_text("OUTSIDE THE PROJECT: never sent.")
    return billing


def test_agents_md_from_a_nested_project_arrive_outermost_first(
    live: Live, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(make_project(tmp_path, {"name": "my-app"}))
    result = live.run("How do I store prices?")
    assert result.exit_code == 0, result.output
    prompt = live.system_prompt
    outer = prompt.index("# Project context: AGENTS.md\n")
    inner = prompt.index("# Project context: services/billing/AGENTS.md\n")
    assert outer < inner
    assert prompt.index("Stack: Go and PostgreSQL.") < inner
    assert prompt.index("Billing: amounts are integer cents.") > inner
    assert "OUTSIDE THE PROJECT" not in prompt  # the walk stopped at eonyx.json
    assert "Eonyx" in prompt  # the generated prompt, with its identity


def test_project_system_prompt_replaces_generation_and_the_flag_beats_it(
    live: Live, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(make_project(tmp_path, {"system_prompt": "You are a terse pirate."}))
    assert live.run("Ahoy").exit_code == 0
    assert live.system_prompt == "You are a terse pirate."
    body = live.llm.completions[-1].body
    assert "Project context" not in json.dumps(body)

    result = live.run("--system-prompt", "You are a careful accountant.", "Hello")
    assert result.exit_code == 0, result.output
    assert live.system_prompt == "You are a careful accountant."
    assert "Project context" not in json.dumps(live.llm.completions[-1].body)


def test_system_prompt_flag_outside_any_project(live: Live) -> None:
    result = live.run("--system-prompt", "Answer in French.", "Hello")
    assert result.exit_code == 0, result.output
    assert live.system_prompt == "Answer in French."


def test_a_bad_eonyx_json_is_a_clear_error(
    live: Live, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "eonyx.json").write_text("{not json")
    monkeypatch.chdir(broken)
    result = live.run("hi")
    assert result.exit_code == 1
    assert "eonyx.json is not valid JSON" in result.output
    assert live.session_ids() == []
    assert live.llm.completions == []


def gauge(result: Result) -> tuple[int, str]:
    """(N, the raw text around it) of the `{ctx N%}` in the output."""
    found = re.search(r"(\x1b\[[0-9;]*m)*\{ctx (\d+)%\}(\x1b\[[0-9;]*m)*", result.output)
    assert found, result.output
    return int(found.group(2)), found.group(0)


def test_the_context_gauge_is_printed_and_highlighted_from_80_percent(
    make_live: Callable[..., Live],
) -> None:
    live = make_live(color=True, EONYX_LLM_CONTEXT_WINDOW="1000")
    calm = live.run("--system-prompt", "Be brief.", "hi")
    assert calm.exit_code == 0, calm.output
    percent, raw = gauge(calm)
    assert percent < 80
    assert raw == f"{{ctx {percent}%}}"

    live.llm.script(text("ok"))
    high = live.run("--system-prompt", "x" * 3300, "hi")
    percent, raw = gauge(high)
    assert 80 <= percent < 90, repr(raw)
    assert raw.startswith(YELLOW_BOLD), repr(raw)

    live.llm.script(text("ok"))
    full = live.run("--system-prompt", "x" * 3700, "hi")
    percent, raw = gauge(full)
    assert percent >= 90, repr(raw)
    assert raw.startswith(RED_BOLD), repr(raw)
    assert ANSI.sub("", full.stdout) == "ok\n"  # the gauge is not part of the answer


def test_format_gauge_thresholds() -> None:
    assert run_module.format_gauge(None) is None
    assert run_module.format_gauge(79.9) == "{ctx 79%}"
    assert run_module.format_gauge(80.0) == click.style("{ctx 80%}", fg="yellow", bold=True)
    assert run_module.format_gauge(90.0) == click.style("{ctx 90%}", fg="red", bold=True)


def test_json_prints_the_whole_turn(make_live: Callable[..., Live]) -> None:
    live = make_live(EONYX_LLM_CONTEXT_WINDOW="100000")
    live.llm.script(text("Forty-two."))
    result = live.run("--json", "The answer?")
    assert result.exit_code == 0, result.output
    turn = json.loads(result.stdout)
    assert turn["user_message"]["content"] == "The answer?"
    assert turn["assistant_message"]["content"] == "Forty-two."
    assert turn["steps"] == []
    assert turn["context"]["window"] == 100000
    assert turn["context"]["percent"] is not None
    assert live.session_ids() == [turn["session_id"]]
    assert result.stderr == ""


def test_streaming_prints_tokens_as_they_arrive(
    live: Live, monkeypatch: pytest.MonkeyPatch
) -> None:
    pieces: list[str] = []
    real_echo = run_module.echo_token

    def record(piece: str) -> None:
        pieces.append(piece)
        real_echo(piece)

    monkeypatch.setattr(run_module, "echo_token", record)
    monkeypatch.setattr(run_module, "stdout_is_tty", lambda: True)  # as on a terminal
    live.llm.script(text("Streaming works fine, token by token."))
    result = live.run("stream please")
    assert result.exit_code == 0, result.output
    assert len(pieces) > 1
    assert "".join(pieces) == "Streaming works fine, token by token."
    assert result.stdout == "Streaming works fine, token by token.\n"
    assert live.llm.completions[-1].streamed
    session_id = session_of(result)
    assert live.transcript(session_id)[-1] == ("assistant", "Streaming works fine, token by token.")

    pieces.clear()
    live.llm.script(text("Plain this time."))
    plain = live.run("--no-stream", "-s", session_id, "no stream")
    assert plain.stdout == "Plain this time.\n"
    assert pieces == []
    assert not live.llm.completions[-1].streamed

    monkeypatch.setattr(run_module, "stdout_is_tty", lambda: False)
    live.llm.script(text("Forced."))
    forced = live.run("--stream", "-s", session_id, "force it")
    assert forced.stdout == "Forced.\n"
    assert len(pieces) > 1
    assert "".join(pieces) == "Forced."
    assert live.llm.completions[-1].streamed


LINE_BREAKING = "one\u2028two\u2029three\x85four"  # line breaks to str.splitlines, not to JSON


def test_a_streamed_token_holding_unicode_line_breaks_arrives_whole(
    live: Live, monkeypatch: pytest.MonkeyPatch
) -> None:
    pieces: list[str] = []
    real_echo = run_module.echo_token

    def record(piece: str) -> None:
        pieces.append(piece)
        real_echo(piece)

    monkeypatch.setattr(run_module, "echo_token", record)
    # chunk_size 3 cuts the text so that each of U+2028, U+2029, U+0085 lies inside a token.
    live.llm.script(text(LINE_BREAKING, chunk_size=3))
    result = live.run("--stream", "break my lines")
    assert result.exit_code == 0, result.output
    assert len(pieces) > 1
    assert "".join(pieces) == LINE_BREAKING
    # On the terminal U+0085, a C1 control, is shown as an escape (README: "Text Eonyx accepts")
    assert result.stdout == printable(LINE_BREAKING, multiline=True) + "\n"
    assert live.transcript(session_of(result))[-1] == ("assistant", LINE_BREAKING)


def test_a_streamed_run_shows_tool_steps_and_memory_writes_on_stderr(
    live: Live, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run_module, "stdout_is_tty", lambda: True)  # as on a terminal
    live.rt.tools.register(Tool("clock", "Tell the time", {"type": "object"}, lambda c, a: "12:00"))
    live.llm.script(
        tool_calls(
            tool_call("clock", {"city": "Oslo"}),
            tool_call("manage_memory", {"action": "add", "content": "Lives in Oslo"}),
        ),
        text("It is noon."),
    )
    result = live.run("What time is it?")
    assert result.exit_code == 0, result.output
    assert result.stdout == "It is noon.\n"  # the answer alone
    steps = result.stderr.splitlines()[:4]
    assert steps == [
        '· clock({"city": "Oslo"})',
        "  → 12:00",
        '· manage_memory({"action": "add", "content": "Lives in Oslo"})',
        steps[3],
    ]
    assert steps[3].startswith("  → Saved: added 'Lives in Oslo' to MEMORY.md")
    assert "✎ added 'Lives in Oslo' to MEMORY.md" in result.stderr


def test_a_model_error_exits_1_with_the_message_and_retry_answers(live: Live) -> None:
    live.llm.script(error(400, "This model's maximum context length is 8192 tokens"))
    result = live.run("a long question")
    assert result.exit_code == 1
    session_id = session_of(result)
    # A user is told which offering failed and how; the provider's words go to the log only.
    assert "'default' refused the request (HTTP 400)" in result.output
    assert "request id" in result.output
    assert "maximum context length" not in result.output
    assert "(llm_rejected)" in result.output
    assert f"eonyx run -s {session_id} --retry" in result.output
    assert live.transcript(session_id) == [("user", "a long question")]

    live.llm.script(text("A short answer."))
    retried = live.run("-s", session_id, "--retry")
    assert retried.exit_code == 0, retried.output
    assert retried.stdout == "A short answer.\n"
    assert live.transcript(session_id) == [
        ("user", "a long question"),
        ("assistant", "A short answer."),
    ]
    again = live.run("-c", "--retry")
    assert again.exit_code == 1
    assert "nothing_to_retry" in again.output
    assert live.run("--retry").exit_code == 2  # a new session has nothing to retry
    assert live.run("-s", session_id, "--retry", "text").exit_code == 2


def test_a_stream_dying_midway_is_an_error_and_retry_answers(
    live: Live, monkeypatch: pytest.MonkeyPatch
) -> None:
    live.llm.script(broken_stream("This answer will never finish", after=3))
    result = live.run("--stream", "go")
    assert result.exit_code == 1
    session_id = session_of(result)
    assert "'default' is unavailable" in result.output
    assert "request id" in result.output
    assert f"eonyx run -s {session_id} --retry" in result.output

    live.llm.script(text("Complete answer."))
    retried = live.run("--stream", "-s", session_id, "--retry")
    assert retried.exit_code == 0, retried.output
    assert retried.stdout == "Complete answer.\n"
    assert live.transcript(session_id) == [("user", "go"), ("assistant", "Complete answer.")]


def test_no_model_is_an_error_and_leaves_no_empty_session(
    make_live: Callable[..., Live],
) -> None:
    live = make_live(model=False)
    for args in (["hi"], ["--stream", "hi"]):
        result = live.run(*args)
        assert result.exit_code == 1
        assert "(no_model)" in result.output
        assert "--retry" not in result.output
        assert live.session_ids() == []
        assert live.api("GET", "/sessions", params={"trash": "true"})["items"] == []


def test_not_logged_in(live: Live) -> None:
    live.runner.env["EONYX_TOKEN"] = None
    result = live.run("hi")
    assert result.exit_code == 1
    assert "eonyx login" in result.output


def test_the_projects_eonyx_json_bounds_the_window(make_live: Callable[..., Live]) -> None:
    """eonyx.json's `context_window` holds the project's sessions to a smaller window than the
    model's (the first spec: "set the model's real window size in eonyx.json"); the smaller
    of the two wins, for the gauge, for compaction and for what is refused."""
    live = make_live(EONYX_LLM_CONTEXT_WINDOW="100000")
    Path("eonyx.json").write_text('{"context_window": 1000}')  # the project root (cwd)
    live.llm.script(text("Forty-two."))
    result = live.run("--json", "The answer?")
    assert result.exit_code == 0, result.output
    turn = json.loads(result.stdout)
    assert turn["context"]["window"] == 1000
    context = live.api("GET", f"/sessions/{turn['session_id']}/context")
    assert (context["window"], context["percent"]) == (1000, turn["context"]["percent"])

    refused = live.run("-s", turn["session_id"], "word " * 1500)
    assert refused.exit_code == 1
    assert "context window of 1,000 tokens" in refused.output
    assert "as the project's eonyx.json sets it" in refused.output

    Path("eonyx.json").write_text('{"context_window": 1000000}')  # larger: the model's wins
    live.llm.script(text("Still here."))
    wide = json.loads(live.run("--json", "-s", turn["session_id"], "And now?").stdout)
    assert wide["context"]["window"] == 100000

    Path("eonyx.json").write_text('{"context_window": "big"}')
    bad = live.run("hello")
    assert bad.exit_code == 1
    assert "context_window must be a whole number of tokens" in bad.output


def test_regenerate_replaces_the_last_answer(live: Live) -> None:
    live.llm.script(text("The first answer."))
    session_id = session_of(live.run("a question"))
    live.llm.script(text("A better answer."))

    again = live.run("-s", session_id, "--regenerate")

    assert again.exit_code == 0, again.output
    assert again.stdout == "A better answer.\n"
    assert live.transcript(session_id) == [
        ("user", "a question"),
        ("assistant", "A better answer."),
    ]
    assert live.run("--regenerate").exit_code == 2  # a new session has nothing to answer again
    assert live.run("-s", session_id, "--regenerate", "text").exit_code == 2
    assert live.run("-s", session_id, "--regenerate", "--retry").exit_code == 2
