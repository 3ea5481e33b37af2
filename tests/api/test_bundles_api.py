"""Export (zip bundle, Markdown) and import: a round trip of content and images; every bad
bundle refused with nothing written; the upload limit enforced while the body streams in."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import random
import stat
import zipfile
from collections.abc import Callable
from typing import Any

import pytest
from PIL import Image

from shared.db.orm import SessionRow
from shared.sessions import bundles
from tests.api.conftest import API, Chat, RecordingJobs
from tests.conftest import create_account, stored
from tests.fake_llm import text, tool_call, tool_calls

MIB = 1024 * 1024


def picture(kind: str, color: tuple[int, int, int]) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (20, 12), color).save(out, kind)
    return out.getvalue()


def data_url(data: bytes, media: str) -> dict[str, Any]:
    url = f"data:{media};base64,{base64.b64encode(data).decode()}"
    return {"type": "image_url", "image_url": {"url": url}}


def messages(chat: Chat, session_id: str, headers: dict[str, str] | None = None) -> list[dict]:
    url = f"{API}/sessions/{session_id}/messages"
    return chat.client.get(url, headers=headers or chat.user.headers).get_json()["items"]


def comparable(items: list[dict]) -> list[tuple]:
    return [
        (m["role"], m["content"], m.get("images"), m.get("tool_calls"), m.get("tool_call_id"))
        for m in items
    ]


def export(chat: Chat, session_id: str, fmt: str = "zip"):  # type: ignore[no-untyped-def]
    url = f"{API}/sessions/{session_id}/export?format={fmt}"
    return chat.client.get(url, headers=chat.user.headers)


def import_bundle(chat: Chat, data: bytes, headers: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    return chat.client.post(
        f"{API}/sessions/import",
        data=data,
        content_type="application/zip",
        headers=headers or chat.user.headers,
    )


def a_rich_session(chat: Chat) -> str:
    """Two turns with a PNG, a JPEG and a tool call; pinned, filed, liked."""
    chat.rt.jobs = RecordingJobs()
    session_id = chat.new_session()
    png, jpeg = picture("PNG", (10, 200, 30)), picture("JPEG", (200, 10, 30))
    chat.llm.script(text("A green and a red one."))
    content = [{"type": "text", "text": "Compare"}, data_url(png, "image/png")]
    assert (
        chat.turn(session_id, content=[*content, data_url(jpeg, "image/jpeg")]).status_code == 200
    )
    chat.llm.script(
        tool_calls(tool_call("memory", {"action": "add", "content": "Likes colors"})),
        text("Noted."),
    )
    assert chat.turn(session_id, content="Remember I like colors").status_code == 200
    folder = chat.client.post(f"{API}/folders", json={"name": "Art"}, headers=chat.user.headers)
    chat.client.patch(
        f"{API}/sessions/{session_id}",
        json={"pinned": True, "folder_id": folder.get_json()["id"]},
        headers=chat.user.headers,
    )
    first = messages(chat, session_id)[0]["id"]
    liked = chat.client.post(
        f"{API}/sessions/{session_id}/messages/{first}/like", headers=chat.user.headers
    )
    assert liked.status_code == 202, liked.get_json()
    return session_id


def test_export_then_import_round_trips_content_and_images(chat: Chat) -> None:
    original = a_rich_session(chat)
    response = export(chat, original)
    assert response.status_code == 200
    assert response.mimetype == "application/zip"
    assert f"eonyx-{original}.zip" in response.headers["Content-Disposition"]
    data = response.data
    with zipfile.ZipFile(io.BytesIO(data)) as bundle:
        names = set(bundle.namelist())
        manifest = json.loads(bundle.read("manifest.json"))
        everything = b"".join(bundle.read(name) for name in names)
    assert manifest["format_version"] == 1
    assert manifest["session"]["id"] == original
    assert {"manifest.json", "conversation.jsonl"} < names
    assert len([n for n in names if n.startswith("images/")]) == 2
    for personal in (b"snapshot", b"likes", b"folder_id", b"pinned", chat.user.user_id.encode()):
        assert personal not in everything

    other = create_account(chat.rt, "importer")
    imported = import_bundle(chat, data, other.headers)
    assert imported.status_code == 201, imported.get_json()
    body = imported.get_json()
    new = body["session"]
    assert new["id"] != original
    assert body["imported_from"]["session_id"] == original
    before = chat.client.get(f"{API}/sessions/{original}", headers=chat.user.headers).get_json()
    assert (new["title"], new["message_count"], new["image_count"]) == (
        before["title"],
        before["message_count"],
        before["image_count"],
    )
    assert (new["pinned"], new["folder_id"], new["archived"]) == (False, None, False)
    assert new["source"] == "web"
    copied = messages(chat, new["id"], other.headers)
    assert comparable(copied) == comparable(messages(chat, original))
    assert all("like" not in m for m in copied)
    for name in copied[0]["images"]:
        url = f"{API}/sessions/{new['id']}/images/{name}"
        served = chat.client.get(url, headers=other.headers)
        mine = chat.client.get(
            f"{API}/sessions/{original}/images/{name}", headers=chat.user.headers
        )
        assert served.status_code == 200
        assert served.data == mine.data
    listed = chat.client.get(f"{API}/sessions", headers=other.headers).get_json()["items"]
    assert listed[0]["id"] == new["id"]

    # The importer's model sees the images and the history as its own new session.
    chat.llm.script(text("Still two."))
    turn = chat.client.post(
        f"{API}/sessions/{new['id']}/turns", json={"content": "How many?"}, headers=other.headers
    )
    assert turn.status_code == 200, turn.get_json()
    sent = chat.llm.requests[-1].messages
    assert [p["type"] for p in sent[1]["content"]] == ["text", "image_url", "image_url"]
    again = import_bundle(chat, data, other.headers).get_json()["session"]
    assert again["id"] not in (new["id"], original)  # never overwrites


def test_markdown_export_is_a_readable_transcript(chat: Chat) -> None:
    session_id = a_rich_session(chat)
    response = export(chat, session_id, "markdown")
    assert response.status_code == 200
    assert response.mimetype == "text/markdown"
    body = response.get_data(as_text=True)
    assert body.startswith("# Compare\n")
    assert "## You · " in body
    assert "## Assistant · " in body
    assert "A green and a red one." in body
    assert "![image](images/" in body
    assert "_Calls `memory`_" in body


def test_another_users_session_cannot_be_exported(chat: Chat) -> None:
    session_id = chat.new_session()
    other = create_account(chat.rt, "other")
    url = f"{API}/sessions/{session_id}/export?format=zip"
    assert chat.client.get(url, headers=other.headers).status_code == 404
    bad = chat.client.get(
        f"{API}/sessions/{session_id}/export?format=pdf", headers=chat.user.headers
    )
    assert bad.status_code == 422


def test_a_bundle_can_come_as_a_form_file(chat: Chat) -> None:
    session_id = chat.new_session()
    chat.turn(session_id, content="hello")
    response = chat.client.post(
        f"{API}/sessions/import",
        data={"file": (io.BytesIO(export(chat, session_id).data), "bundle.zip")},
        headers=chat.user.headers,
        content_type="multipart/form-data",
    )
    assert response.status_code == 201, response.get_json()
    assert response.get_json()["session"]["message_count"] == 2


# -- bad bundles ----------------------------------------------------------------------------


def zip_of(entries: dict[str, bytes], **infos: zipfile.ZipInfo) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            archive.writestr(infos.get(name) or name, data)
    return out.getvalue()


def manifest(**changes: Any) -> bytes:
    value = {
        "format": "eonyx-session",
        "format_version": 1,
        "exported_at": "2026-07-05T09:15:00Z",
        "session": {"id": "20260705T091500-1a2b3c4d", "title": "Old chat", "source": "web"},
        "files": {},
    }
    return json.dumps(value | changes).encode()


def line(**record: Any) -> bytes:
    value = {"role": "user", "content": "hi", "created_at": "2026-07-05T09:15:00Z"} | record
    return json.dumps(value).encode() + b"\n"


def good(**extra: bytes) -> dict[str, bytes]:
    return {"manifest.json": manifest(), "conversation.jsonl": line(), **extra}


def symlink(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return info


PNG = picture("PNG", (1, 2, 3))
PNG_NAME = hashlib.sha256(PNG).hexdigest() + ".png"
FAKE = b"not an image, whatever its name says"
FAKE_NAME = hashlib.sha256(FAKE).hexdigest() + ".png"

BAD_BUNDLES: dict[str, tuple[bytes, str]] = {
    "not-a-zip": (b"PK? no, just text", "not a zip"),
    "dot-dot": (zip_of(good(**{"../evil.txt": b"x"})), "climbs out"),
    "dot-dot-inside": (zip_of(good(**{"images/../../x": b"x"})), "climbs out"),
    "absolute": (zip_of(good(**{"/etc/cron.d/evil": b"x"})), "absolute path"),
    "symlink": (
        zip_of(good(**{"images/link": b"/etc/passwd"}), **{"images/link": symlink("images/link")}),
        "symbolic link",
    ),
    "unexpected": (zip_of(good(**{"run.sh": b"rm -rf /"})), "unexpected entry"),
    "ratio-bomb": (zip_of(good(**{"images/" + PNG_NAME: bytes(20 * MIB)})), "zip bomb"),
    "no-manifest": (zip_of({"conversation.jsonl": line()}), "no manifest.json"),
    "manifest-not-json": (zip_of(good(**{"manifest.json": b"{nope"})), "not valid JSON"),
    "manifest-version": (zip_of(good(**{"manifest.json": manifest(format_version=99)})), "99"),
    "manifest-format": (zip_of(good(**{"manifest.json": manifest(format="other")})), "format"),
    "no-conversation": (zip_of({"manifest.json": manifest()}), "no conversation.jsonl"),
    "record-not-json": (zip_of(good(**{"conversation.jsonl": b"{oops\n"})), "line 1"),
    "record-role": (zip_of(good(**{"conversation.jsonl": line(role="system")})), "role"),
    "record-time": (zip_of(good(**{"conversation.jsonl": line(created_at="soon")})), "created_at"),
    "record-parts": (
        zip_of(good(**{"conversation.jsonl": line(content=[data_url(PNG, "image/png")])})),
        "text parts",
    ),
    "missing-image": (
        zip_of(good(**{"conversation.jsonl": line(images=[PNG_NAME])})),
        "lacks",
    ),
    "image-not-an-image": (
        zip_of(
            good(**{"conversation.jsonl": line(images=[FAKE_NAME]), "images/" + FAKE_NAME: FAKE})
        ),
        "not an image",
    ),
    "image-not-its-name": (
        zip_of(
            good(**{"conversation.jsonl": line(images=[FAKE_NAME]), "images/" + FAKE_NAME: PNG})
        ),
        "its name",
    ),
    # JSON that Python's parser cannot read without failing (each was a 500)
    "manifest-deep": (
        zip_of(good(**{"manifest.json": b'{"x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"})),
        "manifest.json is nested more than 64 levels deep",
    ),
    "record-deep": (
        zip_of(good(**{"conversation.jsonl": b"[" * 100_000 + b"]" * 100_000 + b"\n"})),
        "conversation.jsonl line 1 is nested more than 64 levels deep",
    ),
    "record-digits": (
        zip_of(good(**{"conversation.jsonl": b'{"n": ' + b"9" * 4301 + b"}\n"})),
        "line 1 holds an integer of more than 4300 digits",
    ),
    "record-nan": (
        zip_of(good(**{"conversation.jsonl": line() + b'{"role": "user", "n": NaN}\n'})),
        "line 2 is not valid JSON",
    ),
    # tool calls the message format does not know (the Markdown export was a 500 for good)
    "tool-call-text": (
        zip_of(good(**{"conversation.jsonl": line(role="assistant", tool_calls=["run"])})),
        "tool_calls[0] must be an object",
    ),
    "tool-call-function-text": (
        zip_of(
            good(**{"conversation.jsonl": line(role="assistant", tool_calls=[{"function": "f"}])})
        ),
        "tool_calls[0] needs a function object",
    ),
    "tool-call-nameless": (
        zip_of(
            good(
                **{
                    "conversation.jsonl": line(
                        role="assistant", tool_calls=[{"function": {"name": 7}}]
                    )
                }
            )
        ),
        "tool_calls[0] function.name must be text",
    ),
    "tool-call-on-user": (
        zip_of(good(**{"conversation.jsonl": line(tool_calls=[{"function": {"name": "f"}}])})),
        "on an assistant message",
    ),
    # what the text rule refuses in a title or an identifier
    "title-rlo": (
        zip_of(good(**{"manifest.json": manifest(session={"title": "invoice\u202egnp.exe"})})),
        "session.title contains a bidirectional control character (U+202E)",
    ),
    "title-escape": (
        zip_of(good(**{"manifest.json": manifest(session={"title": "\x1b[31mred"})})),
        "session.title contains a control character (U+001B)",
    ),
    "tool-call-id-escape": (
        zip_of(good(**{"conversation.jsonl": line(role="tool", tool_call_id="c\x1b[2J")})),
        "line 1: tool_call_id contains a control character (U+001B)",
    ),
}


def session_files(chat: Chat, user_id: str) -> list[str]:
    directory = chat.rt.store.sessions_dir(user_id)
    return sorted(p.name for p in directory.iterdir()) if directory.exists() else []


def index_rows(chat: Chat) -> int:
    with chat.rt.db.session() as db:
        return db.query(SessionRow).count()


@pytest.mark.parametrize("name", list(BAD_BUNDLES))
def test_a_bad_bundle_is_refused_with_nothing_written(chat: Chat, name: str) -> None:
    data, reason = BAD_BUNDLES[name]
    before = stored(chat.rt)
    response = import_bundle(chat, data)
    assert response.status_code == 400, response.get_json()
    assert reason in response.get_json()["error"]["message"]
    assert stored(chat.rt) == before


def test_too_many_entries_and_too_much_unpacked_are_refused(
    chat: Chat, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bundles, "MAX_ENTRIES", 10)
    many = good(**{f"images/{n:064x}.png": b"x" for n in range(10)})
    response = import_bundle(chat, zip_of(many))
    assert response.status_code == 400
    assert "entries" in response.get_json()["error"]["message"]

    monkeypatch.setattr(bundles, "MAX_ENTRIES", 2000)
    monkeypatch.setattr(bundles, "MIN_UNCOMPRESSED_BUDGET", 1 * MIB)
    text_like = b"".join(b"line %d of a long transcript\n" % n for n in range(20_000))
    spread = good(**{f"images/{n:064x}.png": text_like for n in range(300)})
    big = import_bundle(chat, zip_of(spread))
    assert big.status_code == 400, big.get_json()
    assert "unpacks to more than" in big.get_json()["error"]["message"]
    assert session_files(chat, chat.user.user_id) == []


class Counting(io.RawIOBase):
    """A request body of `size` bytes that counts how much the server read of it (seekable
    only so that the test client can measure it, as it does every body)."""

    def __init__(self, size: int) -> None:
        self.size, self.read_bytes = size, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.read_bytes

    def seek(self, offset: int, whence: int = 0) -> int:
        self.read_bytes = offset if whence == 0 else self.size + offset
        return self.read_bytes

    def readinto(self, buffer: Any) -> int:
        count = min(len(buffer), self.size - self.read_bytes)
        buffer[:count] = b"\0" * count
        self.read_bytes += count
        return count


def test_a_26_mib_upload_is_refused_before_it_is_read_whole(chat: Chat) -> None:
    size = 26 * MIB
    limit = chat.rt.settings.session_import_max_bytes
    assert limit == 25 * MIB

    # Sent chunked (no length given): refused once past the limit, long before the end.
    streamed = Counting(size)
    response = chat.client.post(
        f"{API}/sessions/import",
        input_stream=streamed,
        content_type="application/zip",
        headers=chat.user.headers | {"Transfer-Encoding": "chunked"},
        environ_overrides={"wsgi.input_terminated": True},
    )
    assert response.status_code == 413, response.get_data(as_text=True)
    assert response.get_json()["error"]["code"] == "payload_too_large"
    assert streamed.read_bytes <= limit + 256 * 1024  # the limit and a chunk: not 26 MiB

    # With its length announced: refused before a byte is read.
    announced = Counting(size)
    response = chat.client.post(
        f"{API}/sessions/import",
        input_stream=announced,
        content_type="application/zip",
        headers=chat.user.headers,
    )
    assert response.status_code == 413
    assert announced.read_bytes == 0
    assert session_files(chat, chat.user.user_id) == []


def test_the_upload_limit_is_the_setting(make_chat: Callable[..., Chat]) -> None:
    chat = make_chat(SESSION_IMPORT_MAX_BYTES=str(4096))
    session_id = chat.new_session()
    chat.turn(session_id, content="x" * 10_000)
    data = export(chat, session_id).data
    assert len(data) < 4096
    assert import_bundle(chat, data).status_code == 201
    padded = zip_of(good(**{"images/" + PNG_NAME: random.Random(0).randbytes(6000)}))
    assert len(padded) > 4096
    assert import_bundle(chat, padded).status_code == 413


# -- what an import keeps -------------------------------------------------------------------


def conversation(*records: bytes) -> bytes:
    return zip_of(good(**{"conversation.jsonl": b"".join(records)}))


def test_imported_messages_are_searchable_like_any_others(chat: Chat) -> None:
    data = conversation(
        line(content="Where do eucalyptus trees grow?"),
        line(role="assistant", content=[{"type": "text", "text": "Mostly in Australia."}]),
    )
    response = import_bundle(chat, data)
    assert response.status_code == 201, response.get_json()
    new = response.get_json()["session"]["id"]
    for query in ("eucalyptus", "australia", "old chat"):  # a question, an answer, the title
        found = chat.client.get(f"{API}/sessions?q={query}", headers=chat.user.headers)
        assert [item["id"] for item in found.get_json()["items"]] == [new], query


def test_imported_text_loses_what_the_text_rule_refuses(chat: Chat) -> None:
    data = conversation(
        line(content="invoice\u202egnp.exe \x1b[31mred\x1b[0m"),
        line(role="assistant", content=[{"type": "text", "text": "ok\x07\ud800"}]),
    )
    response = import_bundle(chat, data)
    assert response.status_code == 201, response.get_json()
    new = response.get_json()["session"]["id"]
    assert [m["content"] for m in messages(chat, new)] == [
        "invoicegnp.exe [31mred[0m",
        [{"type": "text", "text": "ok"}],
    ]


def test_a_session_with_tool_calls_an_older_import_let_in_still_exports(chat: Chat) -> None:
    session_id = chat.new_session()
    odd = [{"function": "f"}, {"function": {"name": ["x"], "arguments": {"a": 1}}}, "run"]
    record = {
        "type": "message",
        "id": "0" * 16,
        "role": "assistant",
        "content": "Calling.",
        "created_at": "2026-07-05T09:15:00Z",
        "tool_calls": odd,
    }
    chat.rt.store.append(chat.user.user_id, session_id, [record])  # as written before the check
    response = export(chat, session_id, "markdown")
    assert response.status_code == 200, response.get_data(as_text=True)
    assert '{"a":1}' in response.get_data(as_text=True)


def test_message_ids_are_kept_once_and_replaced_when_used_twice(chat: Chat) -> None:
    data = conversation(line(id="a" * 16), line(id="a" * 16), line(id="not-hex"))
    response = import_bundle(chat, data)
    assert response.status_code == 201, response.get_json()
    ids = [m["id"] for m in messages(chat, response.get_json()["session"]["id"])]
    assert ids[0] == "a" * 16
    assert len(set(ids)) == 3


def test_a_conversation_or_record_over_its_setting_is_413_with_nothing_written(
    make_chat: Callable[..., Chat],
) -> None:
    chat = make_chat(
        SESSION_IMPORT_MAX_SESSION_BYTES=str(64 * 1024),
        SESSION_IMPORT_MAX_RECORD_BYTES=str(16 * 1024),
    )
    before = stored(chat.rt)
    ok = conversation(*(line(content="x" * 15_000) for _ in range(4)))  # 4 records under both
    assert import_bundle(chat, ok).status_code == 201
    before = stored(chat.rt)

    # 90 KiB of text that compresses to under 1 KiB: refused from the zip's header
    expanding = conversation(*(line(content="x" * 15_000) for _ in range(6)))
    assert len(expanding) < 2048
    response = import_bundle(chat, expanding)
    assert response.status_code == 413, response.get_json()
    error = response.get_json()["error"]
    assert error["code"] == "session_too_large"
    assert "SESSION_IMPORT_MAX_SESSION_BYTES" in error["message"]

    one_big = conversation(line(), line(content="x" * 17_000))
    response = import_bundle(chat, one_big)
    assert response.status_code == 413, response.get_json()
    error = response.get_json()["error"]
    assert error["code"] == "record_too_large"
    assert "line 2" in error["message"]
    assert stored(chat.rt) == before


def test_the_import_bounds_default_to_32_mib_a_session_and_2_mib_a_record(chat: Chat) -> None:
    """The bundle of the issue: 0.5 MB of zip that unpacks to a 90 MiB session."""
    assert chat.rt.settings.session_import_max_session_bytes == 32 * MIB
    assert chat.rt.settings.session_import_max_record_bytes == 2 * MIB
    rng = random.Random(1)
    words = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta"]
    paragraph = " ".join(rng.choice(words) for _ in range(200))
    expanding = conversation(
        *(line(content=f"{paragraph} {n} " * 190 + rng.randbytes(800).hex()) for n in range(470))
    )
    assert len(expanding) < 1 * MIB  # 90 MiB compressed less than 200:1: no bomb by ratio
    response = import_bundle(chat, expanding)
    assert response.status_code == 413, response.get_json()
    assert response.get_json()["error"]["code"] == "session_too_large"
    assert session_files(chat, chat.user.user_id) == []
