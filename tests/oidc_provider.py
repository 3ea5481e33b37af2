"""A real OpenID Connect provider for the single sign-on tests: oidc-provider-mock (a server
built on Authlib) in a process of its own on loopback, as an identity provider runs beside
Eonyx. Any client id and secret are accepted; what the ID token says about a person is set
with `person` (its PUT /users/<sub>); its sign-in form takes a `sub`."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from tests.conftest import free_port, wait_for


def _up(issuer: str) -> bool:
    try:
        return httpx.get(issuer + "/.well-known/openid-configuration").status_code == 200
    except httpx.HTTPError:
        return False


@contextmanager
def provider_process(host: str = "127.0.0.1") -> Iterator[str]:
    """Start the provider (it requires a nonce); its issuer URL, naming it by `host`."""
    port = free_port()
    process = subprocess.Popen(
        # -W ignore: it imports authlib.jose, deprecated (Eonyx itself uses joserfc).
        [sys.executable, "-W", "ignore", "-m", "oidc_provider_mock", "-p", str(port)]
        + ["-H", "127.0.0.1", "--require-nonce", "true"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    issuer = f"http://{host}:{port}"
    try:
        wait_for(lambda: process.poll() is None and _up(issuer), 30, "the OpenID provider")
        yield issuer
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def person(issuer: str, sub: str, **claims: Any) -> None:
    """What the provider's ID tokens say about `sub`, beside iss, aud, exp... (a claim named
    like one of those replaces it: that is how a test gets a token for another audience)."""
    assert httpx.put(f"{issuer}/users/{sub}", json=claims).status_code == 204
