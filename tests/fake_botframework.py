"""A fake Bot Framework for the Teams tests, on 127.0.0.1 in a background thread.

    def test_something(fake_botframework: FakeBotFramework) -> None:
        token = fake_botframework.sign(audience="app-id")       # a channel token
        body = fake_botframework.activity("hello")              # a message activity
        ...
        replies = fake_botframework.wait_for_posts(1)

It serves what a bot talks to: the OpenID metadata document (`/openid`), its JWKS (`/keys`,
with RSA keys the tests generate, each endorsing the channel `msteams` unless `publish()` was
told otherwise; `publish()` adds one, as a key rotation would), the
client-credentials token endpoint (`/token`), and the connector
(`/v3/conversations/<id>/activities[/<activity id>]`), which records every post. Connector
failures are scripted with `fail_next(status, headers)`, served in order, once each, to the
next replies (typing indicators go through unless `on="any"`). The
activities' `serviceUrl` is this server, so replies come back here.
"""

from __future__ import annotations

import functools
import json
import secrets
import threading
import time
import uuid
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server
from werkzeug.wrappers import Request, Response

ISSUER = "https://api.botframework.com"
APP_ID = "6a1c3f0e-5b7d-4c2a-9e8f-0123456789ab"
APP_PASSWORD = "bot-secret"
USER_AAD_ID = "9f3b2c1d-0000-4a5b-8c7d-112233445566"
ENDORSED = ("msteams",)  # the channels a published key endorses by default


@dataclass(frozen=True)
class Post:
    """An activity the bot posted to the connector."""

    conversation_id: str
    reply_to: str | None  # the activity id in the path, for replies
    activity: dict[str, Any]
    authorization: str
    at: float

    @property
    def type(self) -> str:
        return self.activity.get("type", "")

    @property
    def text(self) -> str:
        return self.activity.get("text", "")


class _Quiet(WSGIRequestHandler):
    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        pass


def new_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@functools.cache
def first_key() -> rsa.RSAPrivateKey:
    """The key every fake publishes first (generating a 2048-bit key takes a while)."""
    return new_key()


class FakeBotFramework:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.keys: dict[str, rsa.RSAPrivateKey] = {}  # published: kid -> private key
        # kid -> the channels it endorses (None: a key without the field)
        self.endorsements: dict[str, tuple[str, ...] | None] = {}
        self.kid = self.publish(first_key())
        self.posts: list[Post] = []
        self.connector_attempts: list[tuple[str, float]] = []  # (path, time) of every post
        self.token_requests: list[dict[str, str]] = []
        self.jwks_fetches = 0
        self._failures: deque[tuple[int, dict[str, str], str]] = deque()
        self.errors: list[str] = []
        self._server: BaseWSGIServer = make_server(
            "127.0.0.1", 0, self._app, threaded=True, request_handler=_Quiet
        )
        self._thread: threading.Thread | None = None

    # --- lifecycle -----------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.port}"

    @property
    def service_url(self) -> str:
        return self.base_url + "/"

    @property
    def settings_env(self) -> dict[str, str]:
        return {
            "TEAMS_APP_ID": APP_ID,
            "TEAMS_APP_PASSWORD": APP_PASSWORD,
            "TEAMS_OPENID_METADATA_URL": self.base_url + "/openid",
            "TEAMS_TOKEN_URL": self.base_url + "/token",
        }

    def start(self) -> FakeBotFramework:
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)

    # --- keys and tokens -----------------------------------------------------------------

    def publish(
        self, key: rsa.RSAPrivateKey | None = None, endorsements: tuple[str, ...] | None = ENDORSED
    ) -> str:
        """Add a signing key to the JWKS, endorsing `endorsements` (None: a key without the
        field); returns its kid."""
        kid = secrets.token_hex(8)
        with self._lock:
            self.keys[kid] = key or new_key()
            self.endorsements[kid] = endorsements
        return kid

    def sign(
        self,
        *,
        audience: str = APP_ID,
        issuer: str = ISSUER,
        service_url: str | None = None,
        expires_in: float = 3600,
        key: rsa.RSAPrivateKey | None = None,
        kid: str | None = None,
        claims: dict[str, Any] | None = None,
    ) -> str:
        """A channel token as the Bot Framework signs it (by default: valid for this bot)."""
        kid = kid or self.kid
        now = int(time.time())
        payload = {
            "iss": issuer,
            "aud": audience,
            "serviceurl": service_url or self.service_url,
            "nbf": now - 5,
            "iat": now - 5,
            "exp": int(now + expires_in),
        } | (claims or {})
        signing_key = key or self.keys[kid]
        return jwt.encode(payload, signing_key, algorithm="RS256", headers={"kid": kid})

    def activity(
        self,
        text: str = "hello",
        *,
        conversation_id: str = "a:1-personal-chat",
        aad_object_id: str | None = USER_AAD_ID,
        service_url: str | None = None,
        type: str = "message",
        **extra: Any,
    ) -> dict[str, Any]:
        """A Teams message activity from a user to the bot."""
        sender: dict[str, Any] = {"id": "29:1-user", "name": "Ada Lovelace"}
        if aad_object_id:
            sender["aadObjectId"] = aad_object_id
        return {
            "type": type,
            "id": uuid.uuid4().hex,
            "timestamp": "2026-07-05T09:15:00.000Z",
            "serviceUrl": service_url or self.service_url,
            "channelId": "msteams",
            "from": sender,
            "conversation": {"id": conversation_id, "conversationType": "personal"},
            "recipient": {"id": f"28:{APP_ID}", "name": "Eonyx"},
            "text": text,
            "textFormat": "plain",
            "channelData": {"tenant": {"id": "tenant-1"}},
        } | extra

    # --- the connector's script and records ------------------------------------------------

    def fail_next(
        self, status: int, headers: dict[str, str] | None = None, *, on: str = "reply"
    ) -> None:
        """The next connector post (a reply, or `on="any"` post) answers `status`."""
        self._failures.append((status, headers or {}, on))

    def replies(self) -> list[Post]:
        with self._lock:
            return [p for p in self.posts if p.type == "message"]

    def wait_for_replies(self, count: int, timeout: float = 20.0) -> list[Post]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.replies()
            if len(found) >= count:
                return found
            time.sleep(0.02)
        pytest.fail(f"expected {count} replies, got {len(self.replies())}: {self.replies()}")

    # --- the WSGI app -----------------------------------------------------------------------

    def _app(self, environ: dict[str, Any], start_response: Any) -> Any:
        request = Request(environ)
        try:
            response = self._route(request)
        except Exception as exc:  # noqa: BLE001 - recorded, then the test fails on it
            self.errors.append(f"{request.path}: {exc!r}")
            response = Response("fake failed", status=500)
        return response(environ, start_response)

    def _route(self, request: Request) -> Response:
        path = request.path
        if path == "/openid":
            return _json(
                {
                    "issuer": ISSUER,
                    "authorization_endpoint": "https://invalid.example/authorize",
                    "jwks_uri": self.base_url + "/keys",
                    "id_token_signing_alg_values_supported": ["RS256"],
                    "token_endpoint_auth_methods_supported": ["private_key_jwt"],
                }
            )
        if path == "/keys":
            with self._lock:
                self.jwks_fetches += 1
                keys = [
                    RSAAlgorithm.to_jwk(k.public_key(), as_dict=True)
                    | {"kid": kid, "use": "sig"}
                    | _endorsing(self.endorsements[kid])
                    for kid, k in self.keys.items()
                ]
            return _json({"keys": keys})
        if path == "/token" and request.method == "POST":
            with self._lock:
                self.token_requests.append(dict(request.form))
            return _json(
                {"token_type": "Bearer", "expires_in": 3600, "access_token": secrets.token_hex(16)}
            )
        parts = path.split("/")  # ['', 'v3', 'conversations', id, 'activities', (activity id)]
        is_connector = parts[1:3] == ["v3", "conversations"] and parts[4:5] == ["activities"]
        if is_connector and len(parts) in (5, 6):
            reply_to = unquote(parts[5]) if len(parts) == 6 else None
            return self._connector(request, unquote(parts[3]), reply_to)
        return Response("not found", status=404)

    def _connector(self, request: Request, conversation_id: str, reply_to: str | None) -> Response:
        with self._lock:
            self.connector_attempts.append((request.path, time.monotonic()))
            failure = None
            if self._failures and (reply_to is not None or self._failures[0][2] == "any"):
                failure = self._failures.popleft()
        if failure is not None:
            status, headers, _ = failure
            return Response("scripted failure", status=status, headers=headers)
        authorization = request.headers.get("Authorization", "")
        if not authorization.startswith("Bearer "):
            return Response("no token", status=401)
        post = Post(conversation_id, reply_to, request.get_json(), authorization, time.monotonic())
        with self._lock:
            self.posts.append(post)
        return _json({"id": uuid.uuid4().hex})


def _endorsing(endorsements: tuple[str, ...] | None) -> dict[str, Any]:
    return {} if endorsements is None else {"endorsements": list(endorsements)}


def _json(data: Any, status: int = 200) -> Response:
    return Response(json.dumps(data), status=status, mimetype="application/json")


@pytest.fixture
def fake_botframework() -> Iterator[FakeBotFramework]:
    server = FakeBotFramework().start()
    try:
        yield server
    finally:
        server.stop()
    assert not server.errors, "the fake Bot Framework failed:\n" + "\n".join(server.errors)
