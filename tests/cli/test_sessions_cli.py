"""`eonyx sessions ...` against a live server on loopback: the same order as the API, the
transcript, every management command, and the server's reason on every error."""

from __future__ import annotations

import re

from click.testing import CliRunner
from flask.testing import FlaskClient

from cli.command import main
from shared.accounts.people import Principal
from shared.core.clock import isoformat, utcnow
from shared.core.messages import new_message_id
from shared.runtime import Runtime
from shared.sessions import service as session_service
from tests.cli.conftest import login
from tests.conftest import Account

API = "/api/v1"
DATE = r"\d{4}/\d{2}/\d{2} \d{2}:\d{2}"


def new_session(client: FlaskClient, who: Account, **body: object) -> str:
    return client.post(f"{API}/sessions", json=body, headers=who.headers).get_json()["id"]


def say(rt: Runtime, who: Account, session_id: str, *records: dict) -> None:
    principal = Principal(who.user_id, who.username, False, "web", "")
    session_service.append_records(rt, principal, session_id, list(records))


def message(role: str, content: str | None, **extra: object) -> dict:
    record = {"type": "message", "id": new_message_id(), "role": role, "content": content}
    return record | {"created_at": isoformat(utcnow())} | extra


def listed_ids(output: str) -> list[str]:
    return [line.split()[0] for line in output.splitlines() if re.match(r"^\d{8}T", line)]


def run(runner: CliRunner, *args: str, code: int = 0) -> str:
    result = runner.invoke(main, ["sessions", *args])
    assert result.exit_code == code, result.output
    return result.output


def test_the_list_has_the_apis_order_and_follows_every_command(
    runner: CliRunner, client: FlaskClient, alice: Account, rt: Runtime
) -> None:
    login(runner)
    a, b, c = (new_session(client, alice, title=t) for t in ("alpha", "beta", "gamma"))
    say(rt, alice, a, message("user", "hello"))
    assert "pinned" in run(runner, "pin", b)
    api_order = [
        item["id"]
        for item in client.get(f"{API}/sessions", headers=alice.headers).get_json()["items"]
    ]
    output = run(runner)
    assert listed_ids(output) == api_order == [b, a, c]
    assert re.search(rf"^{b}  {DATE}\s+0\* beta$", output, re.M)

    assert "renamed" in run(runner, "rename", c, "Gamma", "rays")
    run(runner, "unpin", b)  # back where its last message puts it, under c
    run(runner, "archive", a)
    assert listed_ids(run(runner)) == [c, b]
    assert listed_ids(run(runner, "--archived")) == [a]
    run(runner, "unarchive", a)
    assert "Gamma rays" in run(runner)

    forked = run(runner, "fork", a, "--title", "alpha 2")
    fork_id = re.search(r"into (\S+) \(1 message\): alpha 2$", forked, re.M).group(1)
    assert listed_ids(run(runner))[0] == fork_id
    assert "hello" in run(runner, "show", fork_id)
    again = run(runner, "fork", a)  # told apart from its original in every list
    assert re.search(r"into \S+ \(1 message\): alpha \(fork\)$", again, re.M)

    folder = client.post(f"{API}/folders", json={"name": "Work"}, headers=alice.headers)
    folder_id = folder.get_json()["id"]
    assert run(runner, "move", c, "--folder", folder_id) == f"moved {c} into folder {folder_id}\n"
    assert listed_ids(run(runner, "--folder", folder_id)) == [c]
    assert run(runner, "move", c, "--unfiled") == f"moved {c} out of its folder\n"
    assert listed_ids(run(runner, "--folder", folder_id)) == []
    assert "--folder FOLDER_ID or --unfiled" in run(runner, "move", c, code=2)

    assert runner.invoke(main, ["sessions", "clear", a], input="n\n").exit_code == 1
    assert run(runner, "clear", a, "--yes").startswith(f"cleared {a}")
    assert re.search(rf"^{a}  {DATE}\s+0  alpha$", run(runner), re.M)


def test_filters_paging_and_search_with_snippets(
    runner: CliRunner, client: FlaskClient, alice: Account, rt: Runtime
) -> None:
    login(runner)
    folder = client.post(f"{API}/folders", json={"name": "Work"}, headers=alice.headers)
    folder_id = folder.get_json()["id"]
    filed = new_session(client, alice, title="filed", folder_id=folder_id)
    loose = [new_session(client, alice, title=f"loose {n}") for n in range(3)]
    say(rt, alice, loose[0], message("user", "the ocelot sleeps in the afternoon sun"))
    assert listed_ids(run(runner, "--folder", folder_id)) == [filed]
    assert set(listed_ids(run(runner, "--folder", "none"))) == set(loose)
    first = runner.invoke(main, ["sessions", "--limit", "2"])
    assert len(listed_ids(first.output)) == 2
    assert "add --all" in first.output
    assert len(listed_ids(run(runner, "--limit", "2", "--all"))) == 4

    found = run(runner, "--search", "ocelot")
    assert listed_ids(found) == [loose[0]]
    assert "    the ocelot sleeps in the afternoon sun" in found.splitlines()
    assert "no sessions matching 'lynx'" in run(runner, "--search", "lynx")
    assert "--archived and --trash" in run(runner, "--archived", "--trash", code=2)


def test_show_prints_the_transcript(
    runner: CliRunner, client: FlaskClient, alice: Account, rt: Runtime
) -> None:
    login(runner)
    session_id = new_session(client, alice, title="Trip")
    call = {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}
    say(
        rt,
        alice,
        session_id,
        message("user", "Weather in Oslo?"),
        message("assistant", None, tool_calls=[call]),
        message("tool", "rain", tool_call_id="c1", name="weather"),
        message("assistant", "Take an umbrella."),
    )
    output = run(runner, "show", session_id)
    lines = output.splitlines()
    assert lines[0] == f"Trip  {session_id}"
    assert re.match(rf"source web · created {DATE} · updated {DATE} · 3 messages$", lines[1])
    assert re.search(rf"^\[{DATE}\] you:  (\S+)\nWeather in Oslo\?$", output, re.M)
    asked = re.search(rf"^\[{DATE}\] you:  (\S+)$", output, re.M).group(1)
    forked = run(runner, "fork", session_id, "--from", asked)  # the printed id works
    assert "(1 message): Trip (fork)" in forked
    assert "  → weather({})" in lines
    assert re.search(rf"^\[{DATE}\] tool weather:  \S+\nrain$", output, re.M)
    assert re.search(rf"^\[{DATE}\] assistant:  \S+\nTake an umbrella\.$", output, re.M)


def test_errors_print_the_servers_reason(
    runner: CliRunner, client: FlaskClient, alice: Account
) -> None:
    login(runner)
    session_id = new_session(client, alice, title="t")
    long = run(runner, "rename", session_id, "x" * 201, code=1)
    assert "title: longer than maximum length 200 (invalid_request)" in long
    missing = run(runner, "show", "20260101T000000-00000000", code=1)
    assert "session not found (not_found)" in missing
    malformed = run(runner, "show", "BADID", code=1)  # seen before: Flask's HTML-page sentence
    assert malformed == (
        "Error: nothing at GET /api/v1/sessions/BADID: check the address and the id (not_found)\n"
    )
    empty = run(runner, "rename", session_id, "", code=1)  # seen before: accepted
    assert "title must not be empty" in empty
    assert (
        client.get(f"{API}/sessions/{session_id}", headers=alice.headers).get_json()["title"] == "t"
    )
    bad = run(runner, "fork", session_id, "--from", "nope", code=1)
    assert "no message nope in this session" in bad
    run(runner, "delete", session_id)
    trashed = run(runner, "pin", session_id, code=1)
    assert "the session is in the trash; restore it first (session_in_trash)" in trashed
