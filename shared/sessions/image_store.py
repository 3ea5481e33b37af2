"""Images in messages: checked, stored beside the session, sent to the model, served back.

A message carries images as OpenAI-style content parts (`image_url` with a `data:` URL; a
remote URL is refused, unless FETCH_IMAGE_URLS lets the server download it) or as uploaded
files. Each must be a real
PNG, JPEG, GIF or WebP (decoded by Pillow, not trusted on its name or its first bytes), at
most MAX_IMAGE_BYTES and IMAGE_MAX_PIXELS, at most MAX_IMAGES_PER_MESSAGE per message.

They are stored content-addressed under the session's folder,

    users/<user-id>/sessions/<session-id>/images/<sha256>.<ext>

and the message record lists their names (`images`), which is what `image_count` counts.
Only the session's owner can read them: the path is under their own directory.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
from PIL import Image, UnidentifiedImageError

from shared.core.errors import InvalidInput, NotFound
from shared.core.messages import image_part
from shared.files.filestore import atomic_write
from shared.sessions.needs import SessionsRuntime

if TYPE_CHECKING:  # the runtime is passed in, never imported: it sits above this package
    from shared.files.session_store import SessionStore

# Pillow's format name -> (media type, file extension)
FORMATS = {
    "PNG": ("image/png", "png"),
    "JPEG": ("image/jpeg", "jpg"),
    "GIF": ("image/gif", "gif"),
    "WEBP": ("image/webp", "webp"),
}
MEDIA_TYPES = {ext: media for media, ext in FORMATS.values()}
FETCH_TIMEOUT = 10.0  # seconds for an image URL, with FETCH_IMAGE_URLS
IMAGE_MAX_PIXELS = 50_000_000  # a small file that decodes to a huge bitmap is refused
NAME_RE = re.compile(r"^[0-9a-f]{64}\.(png|jpg|gif|webp)$")
_DATA_URL = re.compile(
    r"^data:(?P<media>[\w.+-]+/[\w.+-]+)?(?P<params>(;[^,;]*)*),(?P<data>.*)$", re.S
)


@dataclass(frozen=True)
class CheckedImage:
    data: bytes
    media_type: str
    ext: str
    width: int
    height: int

    @property
    def name(self) -> str:
        return f"{hashlib.sha256(self.data).hexdigest()}.{self.ext}"


def check_image(data: bytes, max_bytes: int, *, label: str = "image") -> CheckedImage:
    """A real image of an allowed type and size, or InvalidInput saying what is wrong."""
    if not data:
        raise InvalidInput(f"{label} is empty", code="invalid_image")
    if len(data) > max_bytes:
        raise InvalidInput(
            f"{label} is {len(data)} bytes; at most {max_bytes} are accepted",
            code="image_too_large",
        )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(BytesIO(data)) as image:
                kind, (width, height) = image.format, image.size
                if kind not in FORMATS:
                    raise InvalidInput(
                        f"{label} is {kind}; images must be PNG, JPEG, GIF or WebP",
                        code="invalid_image",
                    )
                if width * height > IMAGE_MAX_PIXELS:
                    raise InvalidInput(
                        f"{label} is {width}x{height} pixels; at most "
                        f"{IMAGE_MAX_PIXELS} pixels are accepted",
                        code="image_too_large",
                    )
                image.verify()  # structure and checksums, not only the header
            with Image.open(BytesIO(data)) as image:  # verify() leaves it unusable: again
                image.draft(image.mode, (max(1, width // 8), max(1, height // 8)))  # JPEG: 1/8
                image.load()  # decoded to the end: a truncated or damaged file fails here
    except InvalidInput:
        raise
    except (Image.DecompressionBombWarning, Image.DecompressionBombError):
        raise InvalidInput(
            f"{label} has more than {IMAGE_MAX_PIXELS} pixels", code="image_too_large"
        ) from None
    except UnidentifiedImageError:
        raise InvalidInput(f"{label} is not an image", code="invalid_image") from None
    except (OSError, SyntaxError, ValueError, EOFError):  # what Pillow raises on damage
        raise InvalidInput(f"{label} is damaged or truncated", code="invalid_image") from None
    media_type, ext = FORMATS[kind]
    return CheckedImage(data, media_type, ext, width, height)


def split_content(
    content: Any, fetch: Callable[[str], bytes] | None = None
) -> tuple[str | None, list[bytes]]:
    """A message's text and inline images, from a string or OpenAI-style content parts
    (`{"type": "text", "text"}` and `{"type": "image_url", "image_url": {"url": "data:..."}}`).
    An http(s) URL is refused unless `fetch` is given (FETCH_IMAGE_URLS), which downloads it."""
    if content is None or isinstance(content, str):
        return content, []
    if not isinstance(content, list):
        raise InvalidInput("content must be text or a list of content parts")
    texts: list[str] = []
    images: list[bytes] = []
    for number, part in enumerate(content, 1):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif kind == "image_url":
            images.append(_image_url_bytes(part.get("image_url"), number, fetch))
        else:
            raise InvalidInput(
                f"content part {number} must be {{type: text, text}} or {{type: image_url, "
                "image_url: {url}}",
                code="invalid_content",
            )
    return "\n".join(texts), images


def _image_url_bytes(image_url: Any, number: int, fetch: Callable[[str], bytes] | None) -> bytes:
    url = image_url.get("url") if isinstance(image_url, dict) else image_url
    if not isinstance(url, str):
        raise InvalidInput(f"content part {number} has no image_url.url", code="invalid_content")
    if fetch is not None and url.lower().startswith(("http://", "https://")):
        return fetch(url)
    match = _DATA_URL.match(url)
    if match is None:
        raise InvalidInput(
            f"content part {number}: images are sent inline as data: URLs (or uploaded); "
            "this server fetches no image URL (FETCH_IMAGE_URLS is off)",
            code="invalid_image",
        )
    if ";base64" not in match["params"]:
        raise InvalidInput(
            f"content part {number}: the data URL is not base64", code="invalid_image"
        )
    try:
        return base64.b64decode(match["data"], validate=True)
    except (binascii.Error, ValueError):
        raise InvalidInput(f"content part {number}: bad base64", code="invalid_image") from None


def url_fetcher(max_bytes: int, timeout: float = FETCH_TIMEOUT) -> Callable[[str], bytes]:
    """A download of an image URL, at most `max_bytes`, for FETCH_IMAGE_URLS. It goes
    wherever the URL points, inside the network too: which is why the setting is off."""

    def fetch(url: str) -> bytes:
        try:
            with httpx.stream("GET", url, timeout=timeout, follow_redirects=True) as response:
                if response.status_code != 200:
                    raise InvalidInput(
                        f"the image at {url} answered HTTP {response.status_code}",
                        code="invalid_image",
                    )
                data = b""
                for piece in response.iter_bytes():
                    data += piece
                    if len(data) > max_bytes:
                        raise InvalidInput(
                            f"the image at {url} is over {max_bytes} bytes",
                            code="image_too_large",
                        )
                return data
        except httpx.HTTPError as exc:
            raise InvalidInput(
                f"the image at {url} could not be fetched: {exc}", code="invalid_image"
            ) from None

    return fetch


def check_all(rt: SessionsRuntime, images: Sequence[bytes]) -> list[CheckedImage]:
    """Every image of one message checked, before anything is saved."""
    limit = rt.settings.max_images_per_message
    if len(images) > limit:
        raise InvalidInput(
            f"a message carries at most {limit} images, got {len(images)}", code="too_many_images"
        )
    max_bytes = rt.settings.max_image_bytes
    return [check_image(data, max_bytes, label=f"image {n}") for n, data in enumerate(images, 1)]


def images_dir(store: SessionStore, user_id: str, session_id: str) -> Path:
    return store.path(user_id, session_id).with_suffix("") / "images"


def save(
    store: SessionStore, user_id: str, session_id: str, images: Sequence[CheckedImage]
) -> list[str]:
    """Write the images (durably, each once) and return their names for the message."""
    directory = images_dir(store, user_id, session_id)
    names = []
    for image in images:
        path = directory / image.name
        if not path.exists():
            directory.mkdir(parents=True, exist_ok=True)
            atomic_write(path, image.data)
            store.usage.add(user_id, "images", len(image.data))
        names.append(image.name)
    return names


def path_of(store: SessionStore, user_id: str, session_id: str, name: str) -> Path:
    """An existing image of the user's session; NotFound for anything else (another user's
    session is not under their directory; a name that is not an image name never resolves)."""
    if not NAME_RE.match(name):
        raise NotFound("image not found")
    path = images_dir(store, user_id, session_id) / name
    if not path.is_file():
        raise NotFound("image not found")
    return path


def media_type(name: str) -> str:
    return MEDIA_TYPES[name.rsplit(".", 1)[1]]


def model_parts(
    store: SessionStore, user_id: str, session_id: str, names: Sequence[str]
) -> list[dict[str, Any]]:
    """The images of a message as OpenAI `image_url` parts (data URLs). A file gone missing
    is left out rather than failing the turn."""
    parts = []
    for name in names:
        try:
            data = path_of(store, user_id, session_id, name).read_bytes()
        except (NotFound, OSError):
            continue
        url = f"data:{media_type(name)};base64,{base64.b64encode(data).decode()}"
        parts.append(image_part(url))
    return parts
