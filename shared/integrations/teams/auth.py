"""Checks on every incoming activity: its bearer token, then its serviceUrl and tenant.

The Bot Framework signs a JWT for each activity it sends. It is accepted only when pyjwt
verifies it (no JWT is parsed by hand here): RS256, signed by a key of the JWKS that the
OpenID metadata document names (cached; refetched when a token names an unknown key id),
issued by that document's issuer, for this bot's app id, and not expired (with the clock skew
Microsoft allows). The activity's serviceUrl must equal the token's `serviceurl` claim, so a
reply only ever goes where the Bot Framework said it may. And, as the Bot Framework's own
authentication does, the activity's channelId must be one the signing key endorses: each key
of its JWKS lists the channels it may sign for (`"endorsements": ["msteams", ...]`), so a key
issued for another channel cannot vouch for a Teams message.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, NamedTuple

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


class VerifiedToken(NamedTuple):
    """A token's verified claims, and the channels its signing key endorses (None when the
    key lists none, as in the Bot Framework's SDKs, which then skip that check)."""

    claims: Mapping[str, object]
    expires: float  # its `exp`, which the decoder required and checked
    endorsements: frozenset[str] | None


class EndorsedJWKClient(PyJWKClient):
    """pyjwt's JWKS client, also keeping each key's `endorsements` (a Bot Framework field of
    the JWK that pyjwt does not read) from every key set it fetches."""

    def __init__(self, uri: str, **options: Any) -> None:
        super().__init__(uri, **options)
        self.endorsements: dict[str, frozenset[str]] = {}

    def fetch_data(self) -> Any:
        data = super().fetch_data()
        found: dict[str, frozenset[str]] = {}
        keys = data.get("keys") if isinstance(data, dict) else None
        for key in keys if isinstance(keys, list) else ():
            if not isinstance(key, dict) or not isinstance(key.get("kid"), str):
                continue
            listed = key.get("endorsements")
            if isinstance(listed, list):
                found[key["kid"]] = frozenset(e for e in listed if isinstance(e, str))
        self.endorsements = found  # replaced whole: a reader sees one fetch's or the next's
        return data


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
        self._issuer: str | None = None
        self._metadata_at = 0.0
        self._jwks: EndorsedJWKClient | None = None
        self._verified: OrderedDict[str, VerifiedToken] = OrderedDict()

    def _load_metadata(self) -> tuple[str, EndorsedJWKClient]:
        """(issuer, JWKS client), from the metadata document fetched at most once a day."""
        with self._lock:
            stale = time.monotonic() - self._metadata_at > METADATA_TTL
            if self._issuer is None or self._jwks is None or stale:
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
                    self._jwks = EndorsedJWKClient(
                        jwks_uri,
                        lifespan=JWKS_TTL,
                        timeout=10,
                        cooldown_duration=self.jwks_cooldown,
                    )
                self._issuer, self._metadata_at = metadata["issuer"], time.monotonic()
            assert self._issuer is not None
            assert self._jwks is not None
            self._jwks.cooldown_duration = self.jwks_cooldown
            return self._issuer, self._jwks

    def verify(self, authorization: str | None) -> VerifiedToken:
        """The verified claims of `Authorization: Bearer <jwt>` and its key's endorsements,
        or Unauthorized.

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
        if cached is not None and cached.expires + CLOCK_SKEW > time.time():
            return cached
        verified = self._verify(token)
        with self._lock:
            self._verified[token] = verified
            while len(self._verified) > VERIFIED_CACHE:
                self._verified.popitem(last=False)
        return verified

    def _verify(self, token: str) -> VerifiedToken:
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
            claims = jwt.decode(
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
        expires = float(claims["exp"])
        return VerifiedToken(claims, expires, jwks.endorsements.get(header["kid"]))


def check_activity(
    token: VerifiedToken,
    service_url: str | None,
    channel_id: str | None,
    tenant_id: str | None,
    settings: Settings,
) -> None:
    """The activity may be trusted as far as the token vouches for it: the same serviceUrl,
    a channel its signing key endorses, and (for a single-tenant bot) the configured tenant.
    An activity naming no channel passes the SDKs' check; here it does not, when the key
    endorses channels: a Teams activity always names `msteams`."""
    claims = token.claims
    claimed = next((claims[name] for name in SERVICE_URL_CLAIMS if name in claims), None)
    if not isinstance(claimed, str) or not service_url:
        raise _invalid("the token or the activity names no serviceUrl")
    if claimed.rstrip("/") != service_url.rstrip("/"):
        raise _invalid("the activity's serviceUrl is not the one its token was issued for")
    if token.endorsements is not None and channel_id not in token.endorsements:
        raise _invalid(f"the token's signing key does not endorse the channel {channel_id!r}")
    wanted = settings.teams_tenant_id
    if wanted and (tenant_id or "").lower() != wanted.lower():
        raise Forbidden("this bot serves one tenant; the activity comes from another")
