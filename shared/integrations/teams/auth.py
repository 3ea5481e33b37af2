"""Checks on every incoming activity: its bearer token, then its serviceUrl and tenant.

The Bot Framework signs a JWT for each activity it sends. It is accepted only when pyjwt
verifies it (no JWT is parsed by hand here): RS256, signed by a key of the JWKS that the
OpenID metadata document names (cached; refetched when a token names an unknown key id),
issued by that document's issuer, for this bot's app id, and not expired (with the clock skew
Microsoft allows). The activity's serviceUrl must equal the token's `serviceurl` claim, so a
reply only ever goes where the Bot Framework said it may.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Any

import httpx
import jwt
from jwt import PyJWKClient

from shared.core.errors import Forbidden, Unauthorized, Unavailable
from shared.core.settings import Settings

CLOCK_SKEW = 5 * 60  # seconds; the Bot Framework SDKs allow the same
METADATA_TTL = 24 * 3600  # Microsoft rotates keys slowly and announces them a day ahead
JWKS_TTL = 24 * 3600
JWKS_COOLDOWN = 30.0  # at most one forced refetch per this many seconds (unknown key ids)
ALGORITHMS = ["RS256"]
VERIFIED_CACHE = 1024  # tokens: the channel sends many activities with one token
SERVICE_URL_CLAIMS = ("serviceurl", "serviceUrl")


def _invalid(message: str) -> Unauthorized:
    return Unauthorized(message, code="invalid_token")


class TokenVerifier:
    """Verifies Bot Framework tokens against the configured OpenID metadata. One per process:
    the metadata and the keys are cached across requests (thread-safe)."""

    def __init__(self, settings: Settings, http: httpx.Client) -> None:
        assert settings.teams_app_id, "the Teams endpoint is off without TEAMS_APP_ID"
        self.app_id = settings.teams_app_id
        self.metadata_url = settings.teams_openid_metadata_url
        self.http = http
        self.jwks_cooldown = JWKS_COOLDOWN
        self._lock = threading.Lock()
        self._metadata: dict[str, Any] | None = None
        self._metadata_at = 0.0
        self._jwks: PyJWKClient | None = None
        self._verified: OrderedDict[str, dict[str, Any]] = OrderedDict()

    def _load_metadata(self) -> tuple[str, PyJWKClient]:
        """(issuer, JWKS client), from the metadata document fetched at most once a day."""
        with self._lock:
            stale = time.monotonic() - self._metadata_at > METADATA_TTL
            if self._metadata is None or self._jwks is None or stale:
                try:
                    response = self.http.get(self.metadata_url)
                    response.raise_for_status()
                    metadata = response.json()
                    jwks_uri = metadata["jwks_uri"]
                    if not isinstance(metadata["issuer"], str) or not isinstance(jwks_uri, str):
                        raise TypeError("issuer and jwks_uri must be strings")
                except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
                    raise Unavailable(
                        f"the Bot Framework's OpenID metadata cannot be read ({exc})"
                    ) from exc
                if self._jwks is None or self._jwks.uri != jwks_uri:
                    self._jwks = PyJWKClient(
                        jwks_uri,
                        lifespan=JWKS_TTL,
                        timeout=10,
                        cooldown_duration=self.jwks_cooldown,
                    )
                self._metadata, self._metadata_at = metadata, time.monotonic()
            assert self._metadata is not None and self._jwks is not None
            self._jwks.cooldown_duration = self.jwks_cooldown
            return self._metadata["issuer"], self._jwks

    def claims(self, authorization: str | None) -> dict[str, Any]:
        """The verified claims of `Authorization: Bearer <jwt>`, or Unauthorized.

        The channel sends many activities with one token: a token verified before is taken
        from a small cache (the very same bytes, so the same signature) while it is unexpired.
        """
        scheme, _, token = (authorization or "").partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise Unauthorized(
                "the Bot Framework sends 'Authorization: Bearer <jwt>'", code="missing_token"
            )
        with self._lock:
            cached = self._verified.get(token)
        if cached is not None and cached["exp"] + CLOCK_SKEW > time.time():
            return cached
        claims = self._verify(token)
        with self._lock:
            self._verified[token] = claims
            while len(self._verified) > VERIFIED_CACHE:
                self._verified.popitem(last=False)
        return claims

    def _verify(self, token: str) -> dict[str, Any]:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.DecodeError:
            raise _invalid("the bearer token is not a JWT") from None
        if header.get("alg") not in ALGORITHMS or not header.get("kid"):
            raise _invalid("the token is not signed with a known algorithm and key id")
        issuer, jwks = self._load_metadata()
        try:
            key = jwks.get_signing_key(header["kid"])
        except jwt.PyJWKClientConnectionError as exc:
            raise Unavailable(f"the Bot Framework's signing keys cannot be read ({exc})") from exc
        except jwt.PyJWKClientError:
            raise _invalid("the token is signed with an unknown key") from None
        try:
            return jwt.decode(
                token,
                key.key,
                algorithms=ALGORITHMS,
                audience=self.app_id,
                issuer=issuer,
                leeway=CLOCK_SKEW,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.ExpiredSignatureError:
            raise _invalid("the token has expired") from None
        except jwt.InvalidAudienceError:
            raise _invalid("the token is for another app id") from None
        except jwt.InvalidIssuerError:
            raise _invalid("the token has an unexpected issuer") from None
        except jwt.InvalidSignatureError:
            raise _invalid("the token's signature does not verify") from None
        except jwt.InvalidTokenError as exc:
            raise _invalid(f"the token is invalid ({exc})") from None


def check_activity(
    claims: dict[str, Any], service_url: str | None, tenant_id: str | None, settings: Settings
) -> None:
    """The activity may be trusted as far as the token vouches for it: the same serviceUrl,
    and (for a single-tenant bot) the configured tenant."""
    claimed = next((claims[name] for name in SERVICE_URL_CLAIMS if name in claims), None)
    if not isinstance(claimed, str) or not service_url:
        raise _invalid("the token or the activity names no serviceUrl")
    if claimed.rstrip("/") != service_url.rstrip("/"):
        raise _invalid("the activity's serviceUrl is not the one its token was issued for")
    wanted = settings.teams_tenant_id
    if wanted and (tenant_id or "").lower() != wanted.lower():
        raise Forbidden("this bot serves one tenant; the activity comes from another")
