"""Images in messages: content parts or multipart files, checked to be real images of an
allowed type and size, stored beside the session, sent to the model, counted, served back
to their owner only."""

from __future__ import annotations

import base64
import io
import os
from collections.abc import Callable
from typing import Any

import pytest
from PIL import Image

from tests.api.conftest import API, Chat
from tests.conftest import create_account
from tests.fake_llm import text


def image(kind: str = "PNG", size: tuple[int, int] = (24, 16), noise: bool = False) -> bytes:
    if noise:
        picture = Image.frombytes("RGB", size, os.urandom(size[0] * size[1] * 3))
    else:
        picture = Image.new("RGB", size, (30, 120, 200))
    out = io.BytesIO()
    picture.save(out, kind)
    return out.getvalue()


def data_url(data: bytes, media: str = "image/png") -> dict[str, Any]:
    url = f"data:{media};base64,{base64.b64encode(data).decode()}"
    return {"type": "image_url", "image_url": {"url": url}}


def images_on_disk(chat: Chat, session_id: str) -> list[str]:
    directory = chat.rt.store.path(chat.user.user_id, session_id).with_suffix("") / "images"
    return sorted(p.name for p in directory.iterdir()) if directory.exists() else []


def item(chat: Chat, session_id: str) -> dict[str, Any]:
    url = f"{API}/sessions/{session_id}"
    return chat.client.get(url, headers=chat.user.headers).get_json()


def test_content_parts_images_reach_the_model_and_come_back_to_their_owner(chat: Chat) -> None:
    png, jpeg = image("PNG"), image("JPEG")
    session_id = chat.new_session()
    chat.llm.script(text("A blue square, twice."))
    response = chat.turn(
        session_id,
        content=[
            {"type": "text", "text": "What are these?"},
            data_url(png),
            data_url(jpeg, "image/jpeg"),
        ],
    )
    assert response.status_code == 200, response.get_json()
    message = response.get_json()["user_message"]
    assert message["content"] == "What are these?"
    names = message["images"]
    assert [n.rsplit(".", 1)[1] for n in names] == ["png", "jpg"]
    assert images_on_disk(chat, session_id) == sorted(names)
    assert item(chat, session_id)["image_count"] == 2

    sent = chat.llm.requests[-1].messages[-1]
    assert sent["role"] == "user"
    assert sent["content"][0] == {"type": "text", "text": "What are these?"}
    assert [part["image_url"]["url"] for part in sent["content"][1:]] == [
        data_url(png)["image_url"]["url"],
        data_url(jpeg, "image/jpeg")["image_url"]["url"],
    ]

    served = chat.client.get(
        f"{API}/sessions/{session_id}/images/{names[0]}", headers=chat.user.headers
    )
    assert served.status_code == 200
    assert served.data == png
    assert served.mimetype == "image/png"
    assert served.headers["X-Content-Type-Options"] == "nosniff"
    other = create_account(chat.rt, "other")
    theirs = chat.client.get(
        f"{API}/sessions/{session_id}/images/{names[0]}", headers=other.headers
    )
    assert theirs.status_code == 404
    missing = chat.client.get(
        f"{API}/sessions/{session_id}/images/../{session_id}.jsonl", headers=chat.user.headers
    )
    assert missing.status_code == 404

    # The next turn sends the history with its images again: the model keeps seeing them.
    chat.llm.script(text("Still blue."))
    chat.turn(session_id, content="And now?")
    history = chat.llm.requests[-1].messages
    assert len(history[1]["content"]) == 3
    assert history[-1]["content"] == "And now?"


def test_a_multipart_upload_carries_images(chat: Chat) -> None:
    session_id = chat.new_session()
    chat.llm.script(text("A GIF and a WebP."))
    response = chat.client.post(
        f"{API}/sessions/{session_id}/turns",
        data={
            "content": "Look",
            "images": [
                (io.BytesIO(image("GIF")), "a.gif"),
                (io.BytesIO(image("WEBP")), "b.webp"),
            ],
        },
        headers=chat.user.headers,
        content_type="multipart/form-data",
    )
    assert response.status_code == 200, response.get_json()
    names = response.get_json()["user_message"]["images"]
    assert [n.rsplit(".", 1)[1] for n in names] == ["gif", "webp"]
    assert item(chat, session_id)["image_count"] == 2
    parts = chat.llm.requests[-1].messages[-1]["content"]
    assert [p["type"] for p in parts] == ["text", "image_url", "image_url"]
    assert parts[2]["image_url"]["url"].startswith("data:image/webp;base64,")


def test_a_message_may_be_only_an_image(chat: Chat) -> None:
    session_id = chat.new_session()
    chat.llm.script(text("A square."))
    assert chat.turn(session_id, content=[data_url(image())]).status_code == 200
    parts = chat.llm.requests[-1].messages[-1]["content"]
    assert [p["type"] for p in parts] == ["image_url"]


def test_an_image_larger_than_a_json_request_is_accepted_within_the_image_limit(
    chat: Chat,
) -> None:
    big = image("PNG", (700, 700), noise=True)
    assert len(big) > chat.rt.settings.max_request_bytes
    session_id = chat.new_session()
    chat.llm.script(text("Noise."))
    response = chat.turn(session_id, content=[{"type": "text", "text": "hm"}, data_url(big)])
    assert response.status_code == 200, response.get_json()


def url_part(url: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": url}}


def bomb() -> bytes:
    """A PNG of 20000 x 20000 pixels in a few kilobytes."""
    out = io.BytesIO()
    Image.new("1", (20000, 20000)).save(out, "PNG")
    return out.getvalue()


@pytest.mark.parametrize(
    ("parts", "code"),
    [
        ([data_url(b"this is no image at all")], "invalid_image"),
        ([data_url(image()[:-30])], "invalid_image"),  # truncated
        ([data_url(b"\x89PNG\r\n\x1a\n" + bytes(200))], "invalid_image"),  # magic, no image
        ([data_url(image("BMP"), "image/bmp")], "invalid_image"),
        ([data_url(image("TIFF"), "image/tiff")], "invalid_image"),
        ([data_url(bomb())], "image_too_large"),
        (
            [{"type": "image_url", "image_url": {"url": "https://example.com/x.png"}}],
            "invalid_image",
        ),
        (
            [{"type": "image_url", "image_url": {"url": "data:image/png,notbase64"}}],
            "invalid_image",
        ),
        ([{"type": "audio", "audio": "x"}], "invalid_content"),
        ([data_url(image())] * 9, "too_many_images"),
    ],
    ids=[
        "text",
        "truncated",
        "magic-only",
        "bmp",
        "tiff",
        "bomb",
        "remote-url",
        "not-base64",
        "unknown-part",
        "too-many",
    ],
)
def test_bad_images_are_refused_and_nothing_is_saved(
    chat: Chat, parts: list[dict[str, Any]], code: str
) -> None:
    session_id = chat.new_session()
    sent = len(chat.llm.requests)
    response = chat.turn(session_id, content=[{"type": "text", "text": "see"}, *parts])
    assert response.status_code == 400, response.get_json()
    assert response.get_json()["error"]["code"] == code
    assert chat.transcript(session_id) == []
    assert images_on_disk(chat, session_id) == []
    assert len(chat.llm.requests) == sent


def test_an_image_over_max_image_bytes_is_refused(make_chat: Callable[..., Chat]) -> None:
    chat = make_chat(MAX_IMAGE_BYTES="2000")
    session_id = chat.new_session()
    big = image("PNG", (64, 64), noise=True)
    as_part = chat.turn(session_id, content=[data_url(big)])
    assert as_part.status_code == 400
    assert as_part.get_json()["error"]["code"] == "image_too_large"
    as_file = chat.client.post(
        f"{API}/sessions/{session_id}/turns",
        data={"content": "x", "images": [(io.BytesIO(big), "big.png")]},
        headers=chat.user.headers,
        content_type="multipart/form-data",
    )
    assert as_file.status_code == 400
    assert as_file.get_json()["error"]["code"] == "image_too_large"
    assert chat.transcript(session_id) == []
    assert images_on_disk(chat, session_id) == []
