"""Single sign-on with an OpenID Connect provider (OIDC_ISSUER): Entra ID, Google, Keycloak...

`Provider.start` makes the authorization request: response type `code`, a random `state`
and `nonce`, and PKCE (S256). What the callback needs to finish (the nonce and the PKCE
verifier) is kept under the state for STATE_TTL seconds, in Redis when there is one (every
API process sees it) or in this process's table, and taken at most once: a replayed state
finds nothing. `Provider.finish` takes it, exchanges the code at the token endpoint
(client_secret_basic or _post, as discovery says; none without a secret) and validates the
ID token: its signature against the provider's JWKS, `iss`, `aud` (and `azp`), `nonce`,
`exp` (LEEWAY seconds of clock skew). Authlib's httpx client does the OAuth 2.0 exchange;
joserfc (Authlib's JOSE library) the JWT.

`sign_in` then finds the account by (issuer, sub) in `user_identities`, or makes one
(OIDC_AUTO_PROVISION) named after `preferred_username` or the email's local part, made
unique. A disabled account is refused as a password sign-in is. With a `groups` claim, the
account's groups become those of the same names (shared.accounts.groups), and OIDC_ADMIN_GROUP
in it makes the account an administrator, its absence a user again (never the last enabled
administrator: that stays, with a warning). Without a `groups` claim neither changes. An
`oid` claim (Entra ID's object id) links the account to that person's Teams messages, as
`eonyx users link` does, unless the object id is linked to another account already.

Imports shared.accounts, shared.integrations.teams, shared.db and shared.core.
"""

from __future__ import annotations

import json
import logging
import re
import secrets
import threading
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import NotRequired, TypedDict, cast
from urllib.parse import urlsplit

import httpx2  # Authlib's httpx integration runs on it (so does the MCP SDK)
import redis
from authlib.common.errors import AuthlibBaseError
from authlib.integrations.httpx_client import OAuth2Client
from joserfc import jwt
from joserfc.errors import ExpiredTokenError, InvalidClaimError, JoseError, MissingClaimError
from joserfc.jwk import KeySet
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from shared.accounts import groups, people
from shared.core import registry
from shared.core.clock import utcnow
from shared.core.errors import (
    Conflict,
    Forbidden,
    InvalidInput,
    Unauthorized,
    Unavailable,
)
from shared.core.settings import Settings
from shared.db.orm import TeamsUserLink, User, UserIdentity
from shared.integrations.teams import links

log = logging.getLogger(__name__)

CALLBACK_PATH = "/api/v1/auth/oidc/callback"
SCOPE = "openid email profile"
STATE_TTL = 600  # seconds from the redirect to the provider until the callback
LEEWAY = 60  # seconds of clock skew allowed on exp, iat and nbf
METADATA_TTL = 3600.0  # seconds the discovery document is kept
TIMEOUT = 10.0  # seconds, for each request to the provider
# Asymmetric algorithms only: never "none", nor HS* (which would make the client secret a key).
ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512")
USERNAME_ROOM = 56  # a derived username's base, leaving room for a "-N" suffix


@dataclass(frozen=True)
class Pending:
    """What the callback of one authorization request needs."""

    nonce: str
    verifier: str


class StateStore:
    """Pending authorization requests by state: Redis (shared by every process) or, without
    it, this process's table. `take` returns a state's record once."""

    def __init__(self, client: redis.Redis | None) -> None:
        self._redis = client
        self._lock = threading.Lock()
        self._table: dict[str, tuple[float, Pending]] = {}

    def put(self, state: str, pending: Pending) -> None:
        value = json.dumps({"nonce": pending.nonce, "verifier": pending.verifier})
        if self._redis is not None:
            self._redis.set(registry.OIDC_STATE + state, value, ex=STATE_TTL)
            return
        with self._lock:
            now = time.monotonic()
            self._table = {k: v for k, v in self._table.items() if v[0] > now}
            self._table[state] = (now + STATE_TTL, pending)

    def take(self, state: str) -> Pending | None:
        if self._redis is not None:
            pipe = self._redis.pipeline()  # MULTI: one caller gets the value and deletes it
            pipe.get(registry.OIDC_STATE + state)
            pipe.delete(registry.OIDC_STATE + state)
            value, deleted = pipe.execute()
            if not value or deleted != 1:
                return None
            data = json.loads(value)
            return Pending(nonce=data["nonce"], verifier=data["verifier"])
        with self._lock:
            until, pending = self._table.pop(state, (0.0, None))
        return pending if pending is not None and until > time.monotonic() else None


def configured(settings: Settings) -> bool:
    return bool(settings.oidc_issuer and settings.oidc_client_id and settings.public_url)


def provider_name(settings: Settings) -> str:
    """The sign-in button's label: OIDC_PROVIDER_NAME, else the issuer's host."""
    return settings.oidc_provider_name or urlsplit(settings.oidc_issuer or "").hostname or "SSO"


class Discovery(TypedDict, total=False):
    """What this server reads of the provider's discovery document (the issuer checked, the
    rest as the provider says; OpenID Connect Discovery 1.0, section 3)."""

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    token_endpoint_auth_methods_supported: list[str]
    id_token_signing_alg_values_supported: list[str]


class IdClaims(TypedDict):
    """A validated ID token's claims: the checked ones typed, the others as the provider
    sent them (read with care)."""

    iss: str
    sub: str
    aud: str | list[str]
    exp: int
    iat: int
    nonce: str
    azp: NotRequired[object]
    groups: NotRequired[object]
    oid: NotRequired[object]
    preferred_username: NotRequired[object]
    email: NotRequired[object]


class Provider:
    """The configured OpenID provider, as this server's client of it (one per process)."""

    def __init__(self, settings: Settings, client: redis.Redis | None) -> None:
        if not configured(settings):
            raise ValueError("OIDC_ISSUER, OIDC_CLIENT_ID and PUBLIC_URL are needed")
        self.settings = settings
        self.issuer = str(settings.oidc_issuer)
        self.client_id = str(settings.oidc_client_id)
        self.redirect_uri = str(settings.public_url) + CALLBACK_PATH
        self.states = StateStore(client)
        self._metadata: Discovery | None = None
        self._fetched = 0.0

    def _client(self, metadata: Discovery | None = None) -> OAuth2Client:
        method = "none"
        if self.settings.oidc_client_secret:
            offered = (metadata or {}).get("token_endpoint_auth_methods_supported") or [
                "client_secret_basic"  # the default OpenID Connect Discovery names
            ]
            method = "client_secret_basic"
            if "client_secret_basic" not in offered and "client_secret_post" in offered:
                method = "client_secret_post"
        return OAuth2Client(
            client_id=self.client_id,
            client_secret=self.settings.oidc_client_secret,
            token_endpoint_auth_method=method,
            scope=SCOPE,
            redirect_uri=self.redirect_uri,
            code_challenge_method="S256",
            timeout=TIMEOUT,
        )

    def _get(self, url: str, what: str) -> dict[str, object]:
        try:
            with self._client() as client:
                response = client.request("GET", url, withhold_token=True)  # public: no token
                response.raise_for_status()
                body = response.json()
        except (httpx2.HTTPError, ValueError) as exc:
            raise Unavailable(
                f"the sign-in provider's {what} could not be read ({url}): {exc}",
                code="oidc_provider_unavailable",
            ) from exc
        if not isinstance(body, dict):
            raise Unavailable(f"the sign-in provider's {what} is not a JSON object ({url})")
        return body

    def metadata(self) -> Discovery:
        """The provider's discovery document (kept METADATA_TTL seconds)."""
        if self._metadata is None or time.monotonic() - self._fetched > METADATA_TTL:
            url = self.issuer + "/.well-known/openid-configuration"
            found = self._get(url, "discovery document")
            named = str(found.get("issuer") or "")
            if named.rstrip("/") != self.issuer:  # OpenID Connect Discovery 1.0, 4.3
                raise Unavailable(
                    f"the discovery document at {url} names the issuer {found.get('issuer')!r}"
                    f", not OIDC_ISSUER {self.issuer!r}",
                    code="oidc_provider_unavailable",
                )
            self._metadata, self._fetched = cast(Discovery, found), time.monotonic()
        return self._metadata

    def start(self) -> tuple[str, str]:
        """A new authorization request: (its state, the provider's URL to send the browser
        to)."""
        metadata = self.metadata()
        state, nonce = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        verifier = secrets.token_urlsafe(64)  # 86 characters: within PKCE's 43-128
        with self._client(metadata) as client:
            url, _ = client.create_authorization_url(
                metadata["authorization_endpoint"],
                state=state,
                nonce=nonce,
                code_verifier=verifier,
            )
        self.states.put(state, Pending(nonce=nonce, verifier=verifier))
        return state, url

    def finish(self, state: str, code: str) -> IdClaims:
        """The validated claims of the ID token the provider gives for `code`; `state` must
        be one `start` made, and is used up."""
        pending = self.states.take(state) if state else None
        if pending is None:
            raise InvalidInput(
                "this sign-in's state is unknown, used already or expired; start the sign-in again",
                code="oidc_bad_state",
            )
        if not code:
            raise InvalidInput("the provider's answer has no code", code="oidc_no_code")
        metadata = self.metadata()
        try:
            with self._client(metadata) as client:
                token = client.fetch_token(
                    metadata["token_endpoint"],
                    grant_type="authorization_code",
                    code=code,
                    code_verifier=pending.verifier,
                )
        except (AuthlibBaseError, httpx2.HTTPError, ValueError) as exc:
            raise Unauthorized(
                f"the sign-in provider refused the code: {exc}", code="oidc_code_refused"
            ) from exc
        if not token.get("id_token"):
            raise Unauthorized("the provider's answer has no ID token", code="oidc_invalid_token")
        return self.validate(str(token["id_token"]), metadata, pending.nonce)

    def validate(self, id_token: str, metadata: Discovery, nonce: str) -> IdClaims:
        """The ID token's claims, once its signature, issuer, audience, nonce and times are
        right; Unauthorized (`oidc_invalid_token`) saying what is wrong otherwise."""
        keys = KeySet.import_key_set(self._get(metadata["jwks_uri"], "signing keys"))  # type: ignore[arg-type]
        offered = metadata.get("id_token_signing_alg_values_supported") or ["RS256"]
        algorithms = [alg for alg in ALGORITHMS if alg in offered] or ["RS256"]
        checks = jwt.JWTClaimsRegistry(
            leeway=LEEWAY,
            iss={"essential": True, "value": metadata["issuer"]},
            aud={"essential": True, "value": self.client_id},
            sub={"essential": True},
            exp={"essential": True},
            iat={"essential": True},
            nonce={"essential": True, "value": nonce},
        )
        try:
            claims = jwt.decode(id_token, keys, algorithms=algorithms).claims
            checks.validate(claims)
        except ExpiredTokenError as exc:
            raise Unauthorized(
                "the provider's ID token has expired (are this server's and the provider's "
                "clocks right?)",
                code="oidc_token_expired",
            ) from exc
        except (InvalidClaimError, MissingClaimError) as exc:
            raise Unauthorized(_claim_problem(exc.claim), code="oidc_invalid_token") from exc
        except (JoseError, ValueError) as exc:
            raise Unauthorized(
                f"the provider's ID token is not valid: {exc}", code="oidc_invalid_token"
            ) from exc
        audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
        if len(audiences) > 1 and claims.get("azp") != self.client_id:
            raise Unauthorized(_claim_problem("azp"), code="oidc_invalid_token")
        return cast(IdClaims, claims)


def _claim_problem(claim: str) -> str:
    why = {
        "aud": "was issued to another client (its aud is not OIDC_CLIENT_ID)",
        "azp": "was issued to another client (its azp is not OIDC_CLIENT_ID)",
        "iss": "comes from another issuer than OIDC_ISSUER",
        "nonce": "does not answer this sign-in (its nonce differs)",
    }.get(claim, f"has a missing or wrong {claim!r} claim")
    return f"the provider's ID token {why}"


@dataclass(frozen=True)
class SignedIn:
    user_id: str
    username: str
    is_admin: bool
    token: str
    created: bool  # the account was made by this sign-in
    admin_changed: bool  # promoted or demoted by this sign-in's groups


def sign_in(db: Session, settings: Settings, claims: IdClaims, ttl: timedelta) -> SignedIn:
    """The account behind validated ID token `claims`, brought up to date with them, and a
    browser sign-in (token) for it. See the module's docstring."""
    issuer, subject = str(claims["iss"]), str(claims["sub"])
    identity = db.get(UserIdentity, (issuer, subject))
    created = identity is None
    if identity is not None:
        user = db.get_one(User, identity.user_id)
    elif settings.oidc_auto_provision:
        user = people.create_user(db, _free_username(db, claims), secrets.token_urlsafe(32))
        db.add(UserIdentity(issuer=issuer, subject=subject, user_id=user.id, created_at=utcnow()))
        db.flush()
        log.warning("audit: user %s (%s) made by a sign-in from %s", user.username, user.id, issuer)
    else:
        raise Forbidden(
            "there is no account for this sign-in, and accounts are not made on first sign-in "
            "here (OIDC_AUTO_PROVISION=false); ask an administrator",
            code="oidc_no_account",
        )
    if user.disabled:
        raise Forbidden(people.DISABLED_MESSAGE, code="account_disabled")
    admin_changed = False
    claimed = claims.get("groups")
    if isinstance(claimed, list):
        names = [str(name) for name in claimed]
        groups.set_groups_by_name(db, user.id, names)
        if settings.oidc_admin_group:
            admin_changed = _set_admin(db, user, settings.oidc_admin_group in names)
    oid = claims.get("oid")
    if isinstance(oid, str):
        _link_teams(db, user, oid)
    _, token = people.browser_sign_in(db, user, ttl)
    return SignedIn(user.id, user.username, user.is_admin, token, created, admin_changed)


def _set_admin(db: Session, user: User, admin: bool) -> bool:
    """Whether the account's administrator flag changed."""
    if user.is_admin == admin:
        return False
    try:
        people.update_user(db, user.id, is_admin=admin)
    except Conflict as exc:  # the last enabled administrator stays one
        log.warning("sign-in of %s: not demoted: %s", user.username, exc.message)
        return False
    log.warning(
        "audit: user %s (%s) %s by the sign-in provider's groups",
        user.username,
        user.id,
        "made an administrator" if admin else "no longer an administrator",
    )
    return True


def _link_teams(db: Session, user: User, oid: str) -> None:
    try:
        aad = links.check_aad_id(oid)
    except InvalidInput:
        return
    current = db.get(TeamsUserLink, aad)
    if current is None:
        links.link(db, user.username, aad)
    elif current.user_id != user.id:
        log.warning(
            "sign-in of %s: Teams user %s stays linked to another account", user.username, aad
        )


def _free_username(db: Session, claims: IdClaims) -> str:
    """`preferred_username` or the email's local part, in the username rule's characters,
    with a number (or, past a few, random hex) added when taken."""
    base = "user"
    for raw in (claims.get("preferred_username"), claims.get("email")):
        if isinstance(raw, str):
            local = raw.strip().split("@")[0]
            slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", local).strip("-._")[:USERNAME_ROOM]
            if slug:
                base = slug.strip("-._")
                break
    candidates = [base, *(f"{base}-{n}" for n in range(2, 10)), f"{base}-{secrets.token_hex(3)}"]
    for candidate in candidates:
        taken = db.scalar(select(User.id).where(func.lower(User.username) == candidate.lower()))
        if taken is None:
            return candidate
    raise Conflict(f"no free username for {base!r}", code="user_exists")
