"""Posting to the Bot Framework connector: replies and typing indicators.

Each post carries a bot token from the client-credentials flow (TEAMS_TOKEN_URL), cached
until shortly before it expires. A 429 is retried after its Retry-After, a 5xx or a dropped
connection after a growing pause, a 401 once with a fresh token; anything else, or running
out of attempts, raises `ConnectorError`. Posts only ever go to a serviceUrl that a verified
token vouched for (see auth.py).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import quote

import httpx

from shared.core.clock import utcnow
from shared.core.errors import EonyxError
from shared.core.settings import BOTFRAMEWORK_TOKEN_URL, Settings
from shared.integrations.teams.activities import Inbound, reply_activity, typing_activity

log = logging.getLogger(__name__)
SCOPE = "https://api.botframework.com/.default"
TOKEN_MARGIN = 5 * 60  # seconds before expiry that a cached token is renewed
MAX_ATTEMPTS = 5
MAX_RETRY_AFTER = 60.0
TYPING_EVERY = 3.0  # Teams shows a typing indicator for a few seconds


class ConnectorError(EonyxError):
    code = "teams_connector"


def token_url(settings: Settings) -> str:
    """The configured endpoint; a single-tenant bot's own tenant when left at the default."""
    tenant = settings.teams_tenant_id
    if tenant and settings.teams_token_url == BOTFRAMEWORK_TOKEN_URL:
        return f"https://login.microsoftonline.com/{tenant}/oauth2/v2.0/token"
    return settings.teams_token_url


def retry_after(response: httpx.Response) -> float | None:
    """Seconds a Retry-After header asks for (a number or an HTTP date), capped."""
    raw = response.headers.get("Retry-After", "").strip()
    if not raw:
        return None
    try:
        seconds = float(raw)
    except ValueError:
        try:
            seconds = (parsedate_to_datetime(raw) - utcnow()).total_seconds()
        except (TypeError, ValueError):
            return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)


class Connector:
    """One per process: a long-lived httpx client and the cached bot token."""

    def __init__(self, settings: Settings, http: httpx.Client) -> None:
        self.app_id = settings.teams_app_id
        self.password = settings.teams_app_password
        self.token_url = token_url(settings)
        self.http = http
        self.backoff = 1.0  # seconds before the first retry of a 5xx; doubles each time
        self._lock = threading.Lock()
        self._token: str | None = None
        self._token_until = 0.0

    def _send(
        self, method: str, url: str, *, attempts: int = MAX_ATTEMPTS, **kwargs: Any
    ) -> httpx.Response:
        """One request with the retries described above (no token handling)."""
        for attempt in range(1, attempts + 1):
            pause = self.backoff * 2 ** (attempt - 1)
            try:
                response = self.http.request(method, url, **kwargs)
            except httpx.TransportError as exc:
                if attempt == attempts:
                    raise ConnectorError(f"{url} cannot be reached ({exc})") from exc
            else:
                if response.status_code < 400:
                    return response
                retryable = response.status_code == 429 or response.status_code >= 500
                if not retryable or attempt == attempts:
                    return response
                if response.status_code == 429:
                    pause = retry_after(response) or pause
            log.info("retrying %s %s in %.1f s (attempt %d)", method, url, pause, attempt)
            time.sleep(pause)
        raise AssertionError("the last attempt returns or raises")

    def token(self, *, renew: bool = False) -> str:
        with self._lock:
            if renew or self._token is None or time.monotonic() >= self._token_until:
                response = self._send(
                    "POST",
                    self.token_url,
                    data={
                        "grant_type": "client_credentials",
                        "client_id": self.app_id,
                        "client_secret": self.password,
                        "scope": SCOPE,
                    },
                )
                if response.status_code != 200:
                    raise ConnectorError(
                        f"the token endpoint answered {response.status_code}: {response.text[:200]}"
                    )
                body = response.json()
                lifetime = float(body.get("expires_in", 3600))
                self._token = body["access_token"]
                self._token_until = time.monotonic() + max(lifetime - TOKEN_MARGIN, lifetime / 2)
            assert self._token is not None
            return self._token

    def post(
        self, url: str, activity: Mapping[str, object], *, attempts: int = MAX_ATTEMPTS
    ) -> Mapping[str, object]:
        """POST an activity with the bot token (renewed once if the connector refuses it)."""
        for renew in (False, True):
            headers = {"Authorization": f"Bearer {self.token(renew=renew)}"}
            response = self._send("POST", url, attempts=attempts, json=activity, headers=headers)
            if response.status_code != 401:
                break
        if response.status_code >= 400:
            raise ConnectorError(
                f"the connector answered {response.status_code}: {response.text[:200]}"
            )
        try:
            return response.json() if response.content else {}
        except ValueError:
            return {}

    @staticmethod
    def _conversation_url(inbound: Inbound) -> str:
        base = inbound.service_url.rstrip("/")
        return f"{base}/v3/conversations/{quote(inbound.conversation_id, safe='')}/activities"

    def reply(self, inbound: Inbound, text: str) -> Mapping[str, object]:
        """Answer the message in its conversation (and thread)."""
        url = f"{self._conversation_url(inbound)}/{quote(inbound.activity_id, safe='')}"
        return self.post(url, reply_activity(inbound, text))

    def typing(self, inbound: Inbound) -> None:
        """One attempt: a lost indicator is harmless, a retried one would hold up the answer."""
        self.post(self._conversation_url(inbound), typing_activity(inbound), attempts=1)

    @contextmanager
    def typing_while(self, inbound: Inbound, every: float = TYPING_EVERY) -> Iterator[None]:
        """Show "typing..." now (before the block starts) and every few seconds until it ends.
        A failed indicator is logged and never fails the turn."""
        done = threading.Event()

        def send() -> bool:
            try:
                self.typing(inbound)
                return True
            except EonyxError as exc:
                log.warning("typing indicator for %s failed: %s", inbound.conversation_id, exc)
                return False

        def keep_typing() -> None:
            while not done.wait(every) and send():
                pass

        thread = threading.Thread(target=keep_typing, name="teams-typing", daemon=True)
        if send():
            thread.start()
        try:
            yield
        finally:
            done.set()
            if thread.is_alive():
                thread.join(timeout=5)  # a post in flight; past that, the answer goes first
