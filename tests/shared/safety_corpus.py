"""The safety filter's test corpus: texts that must be blocked (with the rule expected and
the sensitive part) and texts that must pass.

Every secret is made up here, at import time, from a fixed-seed generator: prefixes are
literals, bodies are random, so the repository holds no string that looks like a live key
(secret scanners and push protection see only prefixes). Numbers with checksums (cards,
IBANs, national ids) are generated to pass their checksum; none is a real person's.
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable
from dataclasses import dataclass

from stdnum import iban as std_iban
from stdnum import luhn
from stdnum.br import cpf as br_cpf
from stdnum.ca import sin as ca_sin
from stdnum.de import idnr as de_idnr
from stdnum.es import dni as es_dni
from stdnum.es import nie as es_nie
from stdnum.fr import nir as fr_nir
from stdnum.gb import nhs as gb_nhs
from stdnum.in_ import aadhaar as in_aadhaar
from stdnum.it import codicefiscale as it_cf
from stdnum.nl import bsn as nl_bsn
from stdnum.pl import pesel as pl_pesel
from stdnum.se import personnummer as se_pnr
from stdnum.us import ssn as us_ssn

from tests.shared.safety_provider_samples import SAMPLES as PROVIDER_SAMPLES


@dataclass(frozen=True)
class Case:
    text: str
    rule: str
    secret: str  # the sensitive part: no 6-character piece of it may appear in a refusal


_rng = random.Random(20250601)
ALNUM = string.ascii_letters + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits
LOWER_HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "_-"
DIGITS = string.digits


def rnd(n: int, alphabet: str = ALNUM) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


def until(make: Callable[[], str], valid: Callable[[str], bool]) -> str:
    for _ in range(100_000):
        value = make()
        if valid(value):
            return value
    raise AssertionError("could not generate a valid value")


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def pem_body(lines: int) -> str:
    return "\n".join(rnd(64, B64) for _ in range(lines)) + "\n" + rnd(24, B64) + "=="


def card(prefix: str, length: int) -> str:
    body = prefix + rnd(length - len(prefix) - 1, DIGITS)
    return body + luhn.calc_check_digit(body)


def group(digits: str, sizes: tuple[int, ...], sep: str = " ") -> str:
    out, i = [], 0
    for size in sizes:
        out.append(digits[i : i + size])
        i += size
    return sep.join(out)


def iban(country: str, bban_make: Callable[[], str]) -> str:
    def make() -> str:
        bban = bban_make()
        return country + std_iban.calc_check_digits(country + "00" + bban) + bban

    return until(make, std_iban.is_valid)


def ssn() -> str:
    return until(
        lambda: (
            f"{_rng.randint(100, 665):03d}-{_rng.randint(1, 99):02d}-{_rng.randint(1, 9999):04d}"
        ),
        us_ssn.is_valid,
    )


def birth_date() -> tuple[int, int, int]:
    return _rng.randint(1950, 1999), _rng.randint(1, 12), _rng.randint(1, 28)


def pesel() -> str:
    y, m, d = birth_date()
    return until(lambda: f"{y % 100:02d}{m:02d}{d:02d}{rnd(5, DIGITS)}", pl_pesel.is_valid)


def personnummer() -> str:
    y, m, d = birth_date()
    return until(lambda: f"{y % 100:02d}{m:02d}{d:02d}-{rnd(4, DIGITS)}", se_pnr.is_valid)


def codice_fiscale() -> str:
    y, m, d = birth_date()
    body = (
        rnd(6, string.ascii_uppercase)
        + f"{y % 100:02d}"
        + "ABCDEHLMPRST"[m - 1]
        + f"{d:02d}"
        + "F205"  # Milano
    )
    return body + it_cf.calc_check_digit(body)


def nir() -> str:
    y, m, _ = birth_date()
    body = f"{_rng.randint(1, 2)}{y % 100:02d}{m:02d}75{rnd(6, DIGITS)}"
    return body + fr_nir.calc_check_digits(body + "00")


def jwt(payload: dict[str, object]) -> str:
    header = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = b64url(json.dumps(payload).encode())
    return f"{header}.{body}.{rnd(43, URLSAFE)}"


def discord_token() -> str:
    user_id = str(_rng.randint(10**17, 10**18 - 1)).encode()
    first = base64.b64encode(user_id).decode().rstrip("=")
    return f"{first}.{rnd(6, URLSAFE)}.{rnd(38, URLSAFE)}"


def luhn_fail(digits: str) -> str:
    last = (int(digits[-1]) + 1) % 10
    return digits[:-1] + str(last)


# --- must block --------------------------------------------------------------------------------

BLOCK: list[Case] = []

# A token's prefix is a public format marker ("ghp_", "sk-ant-api03-"), not the secret: the
# secret is the random body after it (a refusal may well say "a GitHub token").
PUBLIC_PREFIXES = sorted(
    [
        "AGE-SECRET-KEY-1",
        "AKIA",
        "ASIA",
        "AIza",
        "GOCSPX-",
        "ya29.",
        "ghp_",
        "gho_",
        "ghu_",
        "ghs_",
        "ghr_",
        "github_pat_",
        "glpat-",
        "gldt-",
        "glrt-",
        "ATBB",
        "ATATT3",
        "xoxb-",
        "xoxp-",
        "xoxa-2-",
        "xoxr-",
        "xapp-1-",
        "sk_live_",
        "rk_live_",
        "sk_test_",
        "whsec_",
        "SK",
        "SG.",
        "key-",
        "shpat_",
        "shpss_",
        "npm_",
        "pypi-AgEIcHlwaS5vcmc",
        "dckr_pat_",
        "hvs.",
        "sk-ant-api03-",
        "sk-ant-oat01-",
        "sk-or-v1-",
        "sk-proj-",
        "sk-",
        "hf_",
        "gsk_",
        "xai-",
        "pplx-",
        "r8_",
    ],
    key=len,
    reverse=True,
)


def block(text: str, rule: str, secret: str) -> None:
    assert secret in text, (text, secret)
    for prefix in PUBLIC_PREFIXES:
        if secret.startswith(prefix):
            secret = secret[len(prefix) :]
            break
    BLOCK.append(Case(text, rule, secret))


# key material
_b = pem_body(6)
block(
    f"-----BEGIN RSA PRIVATE KEY-----\n{_b}\n-----END RSA PRIVATE KEY-----", "private_key_block", _b
)
_b = pem_body(4)
block(
    f"here is the deploy key:\n-----BEGIN OPENSSH PRIVATE KEY-----\n{_b}\n"
    "-----END OPENSSH PRIVATE KEY-----",
    "private_key_block",
    _b,
)
_b = pem_body(5)
block(
    f"-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n\n{_b}\n"
    "-----END PGP PRIVATE KEY BLOCK-----",
    "private_key_block",
    _b,
)
_b = rnd(64, B64)
block(
    f'SIGNING_KEY = "-----BEGIN EC PRIVATE KEY-----\\n{_b}\\n-----END EC PRIVATE KEY-----"',
    "private_key_block",
    _b,
)
_b = pem_body(3)
block(
    f"-----BEGIN ENCRYPTED PRIVATE KEY-----\n{_b}\n-----END ENCRYPTED PRIVATE KEY-----",
    "private_key_block",
    _b,
)
_b = rnd(64, B64)
block(
    "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: sam@laptop\n"
    f"Public-Lines: 2\n{rnd(64, B64)}\n{rnd(20, B64)}\nPrivate-Lines: 1\n{_b}\n",
    "private_key_block",
    _b,
)


# key bodies without their armour: DER (or OpenSSH) fields of a private key, random key bytes
def der_body(header: bytes, size: int) -> str:
    return base64.b64encode(header + bytes(_rng.randrange(256) for _ in range(size))).decode()


for _header, _size, _text in (
    (b"\x30\x82\x04\xa4\x02\x01\x00\x02\x82\x01\x01\x00", 1180, "rsa key: {}"),
    (b"\x30\x82\x04\xbd\x02\x01\x00\x30\x0d\x06\x09\x2a\x86\x48\x86\xf7\x0d", 1200, "{}"),
    (b"\x30\x77\x02\x01\x01\x04\x20", 112, "the EC key body is {} (no header)"),
    (b"\x30\x2e\x02\x01\x00\x30\x05\x06\x03\x2b\x65\x70\x04\x22\x04\x20", 32, "ed: {}"),
    (b"openssh-key-v1\x00\x00\x00\x00\x04none", 300, "deploy key = {}"),
    (
        b"\x30\x82\x05\x1c\x30\x4e\x06\x09\x2a\x86\x48\x86\xf7\x0d\x01\x05\x0d",
        1300,
        "encrypted key {}",
    ),
):
    _b = der_body(_header, _size)
    block(_text.format(_b), "private_key_body", _b)
_b = der_body(b"\x30\x82\x04\xa4\x02\x01\x00\x02\x82\x01\x01\x00", 1180)
block(
    "key body, wrapped: " + " ".join(_b[i : i + 64] for i in range(0, len(_b), 64)),
    "private_key_body",
    _b[:64],
)

_b = rnd(64, B64)
_sa = {
    "type": "service_account",
    "project_id": "eonyx-prod",
    "private_key_id": rnd(40, LOWER_HEX),
    "private_key": f"-----BEGIN PRIVATE KEY-----\n{_b}\n-----END PRIVATE KEY-----\n",
    "client_email": "sync@eonyx-prod.iam.gserviceaccount.com",
}
block(json.dumps(_sa, indent=2), "gcp_service_account_key", _b)
_k = rnd(40, LOWER_HEX)
block(
    '{"type": "service_account", "project_id": "eonyx-dev", "private_key_id": "' + _k + '"}',
    "gcp_service_account_key",
    _k,
)
_k = "AGE-SECRET-KEY-1" + rnd(58, string.ascii_uppercase + "023456789")
block(f"age key for the backups: {_k}", "age_secret_key", _k)

# cloud providers
_k = "AKIA" + rnd(16, string.ascii_uppercase + "234567")
block(f"The CI user's access key is {_k}", "aws_access_key", _k)
_k = "ASIA" + rnd(16, string.ascii_uppercase + "234567")
block(f"aws_access_key_id = {_k}", "aws_access_key", _k)
_k = rnd(40, B64)
block(f"aws_secret_access_key = {_k}", "aws_secret_key", _k)
_k = rnd(40, B64)
block(f'AWS_SECRET_ACCESS_KEY="{_k}"', "aws_secret_key", _k)
_k = "AIza" + rnd(35, URLSAFE)
block(f"Maps key: {_k}", "google_api_key", _k)
_k = "AIza" + rnd(35, URLSAFE)
block(f"GEMINI_API_KEY={_k}", "google_api_key", _k)
_k = "GOCSPX-" + rnd(28, URLSAFE)
block(f"OAuth client secret {_k}", "google_oauth_secret", _k)
_k = "ya29." + rnd(120, URLSAFE)
block(f"access token for the drive API: {_k}", "google_oauth_secret", _k)
_k = rnd(86, B64) + "=="
block(
    "DefaultEndpointsProtocol=https;AccountName=eonyxstore;"
    f"AccountKey={_k};EndpointSuffix=core.windows.net",
    "azure_storage_key",
    _k,
)
_k = rnd(43, B64) + "="
block(
    "Endpoint=sb://eonyx.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;"
    f"SharedAccessKey={_k}",
    "azure_storage_key",
    _k,
)
_k = rnd(43, ALNUM) + "%3D"
block(
    "https://eonyx.blob.core.windows.net/exports/report.csv?sv=2022-11-02&ss=b&srt=o&sp=r"
    f"&se=2026-01-01T00:00:00Z&st=2025-01-01T00:00:00Z&spr=https&sig={_k}",
    "azure_sas_token",
    _k,
)
_k = rnd(3, ALNUM) + "8Q~" + rnd(34, ALNUM + "_~.")
block(f"client secret value {_k} (expires in 2026)", "azure_client_secret", _k)

# code hosts
for _prefix in ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"):
    _k = _prefix + rnd(36)
    block(f"use {_k} for the release workflow", "github_token", _k)
_k = "github_pat_" + rnd(22) + "_" + rnd(59)
block(f"GH_TOKEN={_k}", "github_token", _k)
_k = "glpat-" + rnd(20, URLSAFE)
block(f"GitLab token: {_k}", "gitlab_token", _k)
_k = "gldt-" + rnd(20, URLSAFE)
block(f"deploy token {_k} for the registry", "gitlab_token", _k)
_k = "glrt-" + rnd(20, URLSAFE)
block(f"runner registered with {_k}", "gitlab_token", _k)
_k = "ATBB" + rnd(32)
block(f"bitbucket app password {_k}", "bitbucket_app_password", _k)
_k = "ATATT3" + rnd(180, URLSAFE + "=")
block(f"Jira API token: {_k}", "atlassian_api_token", _k)

# chat platforms
_k = f"xoxb-{rnd(12, DIGITS)}-{rnd(13, DIGITS)}-{rnd(24)}"
block(f"SLACK_BOT_TOKEN={_k}", "slack_token", _k)
_k = f"xoxp-{rnd(12, DIGITS)}-{rnd(12, DIGITS)}-{rnd(13, DIGITS)}-{rnd(32, LOWER_HEX)}"
block(f"my user token is {_k}", "slack_token", _k)
_k = f"xoxa-2-{rnd(36)}"
block(f"legacy workspace token {_k}", "slack_token", _k)
_k = f"xoxr-{rnd(40)}"
block(f"refresh with {_k}", "slack_token", _k)
_k = f"xapp-1-A{rnd(10, UPPER_DIGITS)}-{rnd(13, DIGITS)}-{rnd(64, LOWER_HEX)}"
block(f"socket mode app token {_k}", "slack_token", _k)
_k = f"T{rnd(10, UPPER_DIGITS)}/B{rnd(10, UPPER_DIGITS)}/{rnd(24)}"
block(f"alerts go to https://hooks.slack.com/services/{_k}", "slack_webhook", _k)
_k = discord_token()
block(f"DISCORD_TOKEN={_k}", "discord_bot_token", _k)
_k = rnd(68, URLSAFE)
block(
    f"webhook: https://discord.com/api/webhooks/{rnd(19, DIGITS)}/{_k}",
    "discord_webhook",
    _k,
)
_k = f"{rnd(10, DIGITS)}:AA{rnd(33, URLSAFE)}"
block(f"telegram bot token {_k}", "telegram_bot_token", _k)

# payments, messaging, commerce
_k = "sk_live_" + rnd(99)
block(f"stripe secret: {_k}", "stripe_key", _k)
_k = "rk_live_" + rnd(99)
block(f"restricted key {_k}", "stripe_key", _k)
_k = "sk_test_" + rnd(24)
block(f"STRIPE_SECRET_KEY={_k}", "stripe_key", _k)
_k = "whsec_" + rnd(32)
block(f"webhook signing secret {_k}", "stripe_key", _k)
_k = "SK" + rnd(32, LOWER_HEX)
block(f"Twilio API key SID {_k}", "twilio_api_key", _k)
_k = rnd(32, LOWER_HEX)
block(f"twilio auth token: {_k}", "twilio_api_key", _k)
_k = f"SG.{rnd(22, URLSAFE)}.{rnd(43, URLSAFE)}"
block(f"SENDGRID_API_KEY={_k}", "sendgrid_api_key", _k)
_k = "key-" + rnd(32, LOWER_HEX)
block(f"mailgun private key {_k}", "mailgun_api_key", _k)
_k = f"{rnd(32, LOWER_HEX)}-{rnd(8, LOWER_HEX)}-{rnd(8, LOWER_HEX)}"
block(f"Mailgun sending key = {_k}", "mailgun_api_key", _k)
_k = "shpat_" + rnd(32, LOWER_HEX)
block(f"shopify admin token {_k}", "shopify_token", _k)
_k = "shpss_" + rnd(32, LOWER_HEX)
block(f"app shared secret {_k}", "shopify_token", _k)

# registries and vaults
_k = "npm_" + rnd(36)
block(f"//registry.npmjs.org/:_authToken={_k}", "npm_token", _k)
_k = "pypi-AgEIcHlwaS5vcmc" + rnd(150, URLSAFE)
block(f"[pypi]\nusername = __token__\npassword = {_k}", "pypi_token", _k)
_k = "dckr_pat_" + rnd(27, URLSAFE)
block(f"docker login -u eonyx --password {_k}", "docker_hub_token", _k)
_k = "hvs." + rnd(90, URLSAFE)
block(f"VAULT_TOKEN={_k}", "vault_token", _k)

# LLM providers
_k = "sk-ant-api03-" + rnd(93, URLSAFE) + "AA"
block(f"ANTHROPIC_API_KEY={_k}", "anthropic_api_key", _k)
_k = "sk-ant-oat01-" + rnd(93, URLSAFE) + "AA"
block(f"claude oauth token {_k}", "anthropic_api_key", _k)
_k = "sk-or-v1-" + rnd(64, LOWER_HEX)
block(f"openrouter key {_k}", "openrouter_api_key", _k)
_k = "sk-proj-" + rnd(74, URLSAFE) + "T3BlbkFJ" + rnd(74, URLSAFE)
block(f"OPENAI_API_KEY={_k}", "openai_api_key", _k)
_k = "sk-" + rnd(20) + "T3BlbkFJ" + rnd(20)
block(f"old OpenAI key {_k}", "openai_api_key", _k)
_k = "sk-" + rnd(32, LOWER_HEX)
block(f"deepseek key: {_k}", "openai_api_key", _k)
_k = "hf_" + rnd(34, string.ascii_letters)
block(f"HF_TOKEN={_k}", "huggingface_token", _k)
_k = "gsk_" + rnd(52)
block(f"groq key {_k}", "groq_api_key", _k)
_k = "xai-" + rnd(80)
block(f"grok api key {_k}", "xai_api_key", _k)
_k = "pplx-" + rnd(48)
block(f"perplexity: {_k}", "perplexity_api_key", _k)
_k = "r8_" + rnd(37)
block(f"REPLICATE_API_TOKEN={_k}", "replicate_api_token", _k)
_k = rnd(40)
block(f"COHERE_API_KEY={_k}", "cohere_api_key", _k)

# generic forms
_k = jwt({"sub": "1234567890", "name": "Sam", "iat": 1735689600})
block(f"session cookie value: {_k}", "jwt", _k)
_k = jwt({"sub": "svc-sync", "scope": "admin"})
block(f"Authorization: Bearer {_k}", "jwt", _k)
_k = rnd(16)
block(f"postgres://app:{_k}@db.internal:5432/eonyx", "connection_string_credentials", _k)
_k = rnd(20)
block(
    f"mongodb+srv://reporting:{_k}@cluster0.ab1cd.mongodb.net/?retryWrites=true",
    "connection_string_credentials",
    _k,
)
_k = rnd(24)
block(f"REDIS_URL=redis://:{_k}@cache.internal:6379/0", "connection_string_credentials", _k)
_k = rnd(30)
block(
    f"clone with https://sam:{_k}@github.com/eonyx/private.git",
    "connection_string_credentials",
    _k,
)
_k = "Pa55-" + rnd(8)
block(f"mysql://root:{_k}@127.0.0.1:3306/shop", "connection_string_credentials", _k)
_k = base64.b64encode(f"admin:{rnd(12)}".encode()).decode()
block(f"Authorization: Basic {_k}", "authorization_header", _k)
_k = rnd(40)
block(
    f"curl -H 'Authorization: Token {_k}' https://api.example.com/v1/me",
    "authorization_header",
    _k,
)
_k = rnd(48, URLSAFE) + "7"
block(f"call the API with Bearer {_k}", "authorization_header", _k)

# password / secret / token / key assignments
block("password=hunter22", "password_assignment", "hunter22")
block(
    '"api_key": "4f9b2c7e1a8d3f6b0e5c9a2d7f1b4e8c"',
    "password_assignment",
    "4f9b2c7e1a8d3f6b0e5c9a2d7f1b4e8c",
)
block("PASSWORD: s3cr3t-Value", "password_assignment", "s3cr3t-Value")
block("export SECRET_KEY=django-insecure-k2#x9!mq7", "password_assignment", "k2#x9!mq7")
block("my password is Xk9#mP2q", "password_assignment", "Xk9#mP2q")
block("DB_PASSWORD=changeme", "password_assignment", "changeme")
block("db_pass = 'Winter2024!'", "password_assignment", "Winter2024!")
block('client_secret: "Zq8vN3xK1pR7tW2y"', "password_assignment", "Zq8vN3xK1pR7tW2y")
block('{"token": "a7Fk29LmQx83NbVc", "user": "sam"}', "password_assignment", "a7Fk29LmQx83NbVc")
block(
    "x-api-key: 9f8e7d6c5b4a39281706f5e4d3c2b1a0",
    "password_assignment",
    "9f8e7d6c5b4a39281706f5e4d3c2b1a0",
)
block("the wifi password is Summer#2025", "password_assignment", "Summer#2025")
block("my PIN is 4821", "password_assignment", "4821")
block(
    "Server=tcp:db.internal;Database=app;User Id=sa;Password=Pa55w0rd!;",
    "password_assignment",
    "Pa55w0rd!",
)
block("mysqldump --password=Qw3rty!23 shop", "password_assignment", "Qw3rty!23")
block('password: str = "letmein123"', "password_assignment", "letmein123")
block(
    'passphrase = "correct horse battery staple"',
    "password_assignment",
    "correct horse battery staple",
)
block("SECRET=8c1f4a9e7b2d", "password_assignment", "8c1f4a9e7b2d")
block('"refresh_token": "1//abcXYZ-793hfk2kLmn"', "password_assignment", "abcXYZ-793hfk2kLmn")
block(
    "the API key for staging is 9f8e7d6c5b4a39281706f5e4d3c2b1a0",
    "password_assignment",
    "9f8e7d6c5b4a39281706f5e4d3c2b1a0",
)
block(
    "token: 7f3c9a1e5b2d8f4a6c0e9b3d7a1f5c2e",
    "password_assignment",
    "7f3c9a1e5b2d8f4a6c0e9b3d7a1f5c2e",
)
block("admin password was Tr0ub4dor&3 until March", "password_assignment", "Tr0ub4dor&3")

# passwords in prose: told, bare, reversed, paired
for _text, _secret in (
    ("log in to prod with password Zx9!kq2LmP", "Zx9!kq2LmP"),
    ("pw: Hq7#vR2mLx", "Hq7#vR2mLx"),
    ("passwd Tm4$wK9pQz", "Tm4$wK9pQz"),
    ("Password for prod db = Bn8@rT3kWs", "Bn8@rT3kWs"),
    ("sudo password Kd5&pL8qRt", "Kd5&pL8qRt"),
    ("the password to the staging box is Yw2!nF7gHj", "Yw2!nF7gHj"),
    ("password for sam@build-01: Vc6*mX1bNq", "Vc6*mX1bNq"),
    ("root pw Gk2!mR7tZq", "Gk2!mR7tZq"),
    ("I changed the password to Ue4!wQ9rTy yesterday", "Ue4!wQ9rTy"),
    ("the VPN password -> Ty6!bN2qWs", "Ty6!bN2qWs"),
    ("PW=Rk3!vX8mQa", "Rk3!vX8mQa"),
    ("Zq7!kq2LmR is the root password", "Zq7!kq2LmR"),
    ("use Jt3%hG8wLp as the admin password", "Jt3%hG8wLp"),
    ("creds: admin / Rf5^kM2xPz", "Rf5^kM2xPz"),
    ("log in as deploy:Gh4!sT9vXc", "Gh4!sT9vXc"),
    ("mot de passe : Fs3!jK8wQm", "Fs3!jK8wQm"),
    ("contraseña: Pd9!xL4kVb", "Pd9!xL4kVb"),
    ("Passwort für den Router lautet Wr6!pK3nTz", "Wr6!pK3nTz"),
    ("the password for the office wifi is still 'Lime-Kite-42'", "Lime-Kite-42"),
):
    block(_text, "password_assignment", _secret)

# every provider of gitleaks' default rules, and its configuration and command-line shapes
for _text, _rule, _secret in PROVIDER_SAMPLES:
    block(_text, _rule, _secret)

# payment cards (Luhn-valid, plausible issuer, generated)
_k = group(card("4", 16), (4, 4, 4, 4))
block(f"my card is {_k}", "payment_card", _k)
_k = group(card("5", 16), (4, 4, 4, 4), "-")
block(f"charge {_k} exp 09/27", "payment_card", _k)
_k = group(card("37", 15), (4, 6, 5))
block(f"Amex {_k}", "payment_card", _k)
_k = card("6011", 16)
block(f"Discover card number: {_k}", "payment_card", _k)
_k = group(card("3530", 16), (4, 4, 4, 4))
block(f"JCB {_k} (travel card)", "payment_card", _k)
_k = group(card("305", 14), (4, 6, 4))
block(f"Diners Club {_k}", "payment_card", _k)
_k = card("62", 19)
block(f"UnionPay {_k}", "payment_card", _k)
_k = card("4", 16)
block(f"card:{_k}", "payment_card", _k)
_k = group(card("2221", 16), (4, 4, 4, 4))
block(f"new Mastercard {_k}", "payment_card", _k)
_k = card("6759", 16)
block(f"Maestro {_k}", "payment_card", _k)

# IBANs (mod-97 valid, country format valid, generated)
_k = iban("DE", lambda: rnd(18, DIGITS))
block(f"my IBAN is {std_iban.format(_k)}", "iban", std_iban.format(_k))
_k = iban("GB", lambda: "NWBK" + rnd(14, DIGITS))
block(f"pay rent to {_k}", "iban", _k)
_k = iban("FR", lambda: rnd(10, DIGITS) + rnd(11, UPPER_DIGITS) + rnd(2, DIGITS))
block(f"IBAN: {std_iban.format(_k)}", "iban", std_iban.format(_k))
_k = iban("NL", lambda: "ABNA" + rnd(10, DIGITS))
block(f"rekening {std_iban.format(_k)}", "iban", std_iban.format(_k))
_k = iban("ES", lambda: rnd(20, DIGITS))
block(f"cuenta {_k}", "iban", _k)
_k = iban("IT", lambda: rnd(1, string.ascii_uppercase) + rnd(10, DIGITS) + rnd(12, DIGITS))
block(f"bonifico su {_k}", "iban", _k)
_k = iban("CH", lambda: rnd(17, DIGITS))
block(f"CH account {std_iban.format(_k)}", "iban", std_iban.format(_k))
_k = iban("PL", lambda: rnd(24, DIGITS))
block(f"konto {_k}", "iban", _k)

# US SSNs
_k = ssn()
block(f"SSN {_k}", "us_ssn", _k)
_k = ssn()
block(f"her social is {_k}", "us_ssn", _k)
_k = ssn()
block(f"{_k} is on the W-2", "us_ssn", _k)
_k = ssn().replace("-", "")
block(f"SSN: {_k}", "us_ssn", _k)
_k = ssn().replace("-", " ")
block(f"social security number {_k}", "us_ssn", _k)

# other national ids (with a context word)
_k = rnd(1, "ABCEHJKLMPRSTWXY") + rnd(1, "ABCEHJKLMPRSTWXYZ") + rnd(6, DIGITS) + rnd(1, "ABCD")
block(f"National Insurance number {_k}", "national_id", _k)
_k = until(lambda: rnd(10, DIGITS), gb_nhs.is_valid)
block(f"NHS number {gb_nhs.format(_k)}", "national_id", gb_nhs.format(_k))
_k = until(lambda: rnd(9, DIGITS), nl_bsn.is_valid)
block(f"mijn BSN is {_k}", "national_id", _k)
_k = until(lambda: rnd(1, "123456789") + rnd(10, DIGITS), de_idnr.is_valid)
block(f"Steuer-ID: {_k}", "national_id", _k)
_k = nir()
block(f"numéro de sécurité sociale {_k}", "national_id", _k)
_k = rnd(8, DIGITS)
_k += es_dni.calc_check_digit(_k)
block(f"DNI {_k}", "national_id", _k)
_k = "X" + rnd(7, DIGITS)
_k += es_nie.calc_check_digit(_k)
block(f"NIE: {_k}", "national_id", _k)
_k = codice_fiscale()
block(f"codice fiscale {_k}", "national_id", _k)
_k = until(lambda: rnd(1, "23456789") + rnd(11, DIGITS), in_aadhaar.is_valid)
block(f"Aadhaar {in_aadhaar.format(_k)}", "national_id", in_aadhaar.format(_k))
_k = until(lambda: rnd(1, "1234567") + rnd(8, DIGITS), ca_sin.is_valid)
block(f"SIN {ca_sin.format(_k)}", "national_id", ca_sin.format(_k))
_k = until(lambda: rnd(11, DIGITS), br_cpf.is_valid)
block(f"CPF {br_cpf.format(_k)}", "national_id", br_cpf.format(_k))
_k = pesel()
block(f"PESEL {_k}", "national_id", _k)
_k = personnummer()
block(f"personnummer {_k}", "national_id", _k)

# health facts about a person
for _text, _secret in (
    ("I was diagnosed with diabetes", "diagnosed with diabetes"),
    ("my HIV status is positive", "HIV status is positive"),
    ("she is pregnant", "is pregnant"),
    ("I take sertraline", "take sertraline"),
    ("I'm in therapy for depression", "therapy for depression"),
    ("User has type 2 diabetes and prefers short answers", "type 2 diabetes"),
    ("My wife has breast cancer", "has breast cancer"),
    ("Bob takes lithium for his bipolar disorder", "takes lithium"),
    ("He's been on Ozempic since March", "on Ozempic"),
    ("I see a psychiatrist every two weeks", "see a psychiatrist"),
    ("The user is HIV-positive", "HIV-positive"),
    ("I had a miscarriage last year", "had a miscarriage"),
    ("I have ADHD, so keep answers structured", "have ADHD"),
    ("My son is autistic", "is autistic"),
    ("they tested positive for covid yesterday", "tested positive for covid"),
    ("Maria is recovering from a heart attack", "heart attack"),
    ("my medical records are at St. Mary's", "medical records are"),
    ("I'm allergic to penicillin", "allergic to penicillin"),
):
    block(_text, "health_fact", _secret)

# financial facts about a person
for _text, _secret in (
    ("my salary is $120k", "salary is $120k"),
    ("I have $40,000 in credit card debt", "$40,000 in credit card debt"),
    ("my credit score is 580", "credit score is 580"),
    ("I declared bankruptcy", "declared bankruptcy"),
    ("I make €85,000 a year", "make €85,000"),
    ("User's monthly rent is $2,400", "rent is $2,400"),
    ("I owe my brother $3,000", "owe my brother $3,000"),
    ("she earns £65k", "earns £65k"),
    ("my net worth is about $2 million", "$2 million"),
    ("I'm behind on my mortgage", "behind on my mortgage"),
    ("I filed for chapter 7 bankruptcy in 2019", "chapter 7 bankruptcy"),
    ("my bank balance is $312.40", "bank balance is $312.40"),
    ("He was evicted last month", "was evicted"),
    ("my husband's student loans are $60k", "student loans are $60k"),
):
    block(_text, "financial_fact", _secret)


# --- must pass ---------------------------------------------------------------------------------

_card_fail = luhn_fail(card("4", 16))
_iban_ok = iban("DE", lambda: rnd(18, DIGITS))
_iban_fail = _iban_ok[:2] + f"{(int(_iban_ok[2:4]) + 1) % 100:02d}" + _iban_ok[4:]
_bsn_no_context = until(lambda: rnd(9, DIGITS), nl_bsn.is_valid)
_bsn_fail = until(lambda: rnd(9, DIGITS), lambda v: not nl_bsn.is_valid(v))

PASS: list[str] = [
    f"Reference {_bsn_no_context}",  # a valid BSN, but no context word near it
    # preferences and ordinary notes
    "I prefer concise answers",
    "Answer in German",
    "Use pnpm, not npm",
    "User prefers dark mode and vim keybindings",
    "Always write tests with pytest and run them with uv run pytest",
    "Call me Sam",
    "I like detailed explanations with examples",
    "Respond in British English",
    "Keep commit messages under 72 characters",
    "No emojis please",
    "My name is Sam and I live in Berlin",
    "She prefers tabs over spaces",
    "He is on call this week",
    "I'm on Python 3.12 and macOS",
    "I take the train to work, so answer on mobile-friendly width",
    "I make coffee at 8am before standup",
    "I have two monitors",
    "I paid $20 for the Pro plan",
    "I'm working on lithium-ion battery firmware",
    "I had a stroke of luck with the deploy",
    # code identifiers and secret-handling code
    "call get_api_key() before the request",
    "SECRET_KEY_SETTING_NAME",
    "store password_hash, never the password",
    "the password field is required",
    "reset your password",
    "Reset your password from the /account page",
    "def check_password(password: str) -> bool:",
    "api_key = os.environ['OPENAI_API_KEY']",
    "token = get_token()",
    "password = getpass.getpass()",
    "login(username=user, password=password)",
    "self.api_key = api_key",
    "password: str",
    "password: Optional[str] = None",
    "PASSWORD_MIN_LENGTH = 12",
    "MAX_TOKENS=4096",
    "max_tokens: 1024",
    "token_count = 512",
    "use the `secrets` module to make tokens",
    "export OPENAI_API_KEY=$OPENAI_API_KEY",
    "API_KEY=${API_KEY}",
    "GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}",
    "api_key: <your-api-key>",
    'password = ""',
    '"password": "********"',
    "private_key_path = /etc/ssl/private/server.key",
    "private_key: ~/.ssh/id_ed25519",
    "public_key: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl",
    "cache_key = 'user:42:profile'",
    "idempotency_key=order-42-retry",
    "primary key: id",
    "Key: value pairs are stored in Redis",
    "the token is refreshed every hour",
    "the password is hashed with argon2",
    "my password is too long for their form",
    "Your password is stored securely",
    "the API key is in 1Password",
    "The JWT secret is loaded from the environment",
    "Token limit is 128000 tokens",
    "my API key is stored in Vault",
    "The pin is 3 characters long",
    "Pin numpy to 1.26.4",
    "CSRF token is stored in a cookie",
    "The Authorization header uses Bearer tokens",
    "Authorization: Bearer <token>",
    "curl -H 'Authorization: Bearer $TOKEN' https://api.example.com",
    "The JWT has three parts: header.payload.signature",
    "Secret Santa is on Friday",
    "The secret to good coffee is fresh beans",
    "The file starts with -----BEGIN OPENSSH PRIVATE KEY-----",
    # placeholders
    "OPENAI_API_KEY=sk-...",
    "set ANTHROPIC_API_KEY to your key (sk-ant-...)",
    "gh" + "p_" + "x" * 36,
    "the AWS docs use AKIAIOSFODNN7EXAMPLE as an example key id",
    "xoxb-your-token",
    "<your-api-key>",
    # hashes, ids, versions
    "fixed in commit 3f2a9c1",
    "git checkout 9fceb02d0ae598e95dc970b74767f19372d61af8",
    "session 123e4567-e89b-12d3-a456-426614174000",
    "request id 8d3e7f0a-4c2b-4f9e-9a1d-2b7c6e5f4a3d",
    "SHA-256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "MD5 d41d8cd98f00b204e9800998ecf8427e",
    "Python 3.11.7",
    "released v1.2.3 on Monday",
    "node 20.11.1",
    "bump to 2.31.0-rc.1",
    "IP 192.168.1.10, MAC 00:1A:2B:3C:4D:5E",
    # dates, prices, ports, paths, URLs
    "2024-01-15",
    "15/01/2024 14:30",
    "deadline 2025-06-01T12:00:00Z",
    "Meeting on March 3rd at 10:00",
    "$20",
    "€9.99/month",
    "the Pro plan costs $20/month",
    "prices are $20/month",
    "budget of $5,000 for cloud spend",
    "£1,299.00 including VAT",
    "We made $2M ARR last year",
    "The company's revenue is $5M",
    "My budget for the trip is €2,000",
    "my rent is due on the 1st",
    "port 5432",
    "listen on localhost:8080",
    "0.0.0.0:6379",
    "/home/user/.config/eonyx/config.toml",
    "C:\\Users\\sam\\AppData\\Local",
    "~/.ssh/config",
    "https://docs.python.org/3/library/re.html",
    "postgres://localhost/db",
    "postgres://user@localhost:5432/app",
    "redis://localhost:6379/0",
    "https://github.com/org/repo/pull/123",
    "postgres://user:<password>@host/db",
    "mongodb://${MONGO_USER}:${MONGO_PASS}@mongo:27017",
    # numbers that look like card numbers, IBANs or ids but fail their checks
    f"order reference {_card_fail}",
    "4111 1111 1111 1112",
    "+1 415 555 2671",
    "+49 30 12345678",
    "timestamp 1700000000000",
    "ISBN 978-3-16-148410-0",
    "Meeting ID: 845 2913 6604",
    "Tracking number 1Z999AA10123456784",
    f"IBAN {_iban_fail}",
    "GB00 WEST 1234 5698 7654 32",
    "000-12-3456",
    "666-12-3456",
    "987-65-4321",
    "Call 555-123-4567",
    f"BSN {_bsn_fail}",
    # colours and base64 of non-secrets
    "#1e90ff",
    "color: #333333",
    "aGVsbG8gd29ybGQ=",
    "SGVsbG8sIFdvcmxkIQ==",
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
    # health and money as subjects of the work, not facts about a person
    "the service handles diabetes data",
    "the salary field is an integer",
    "Build a diabetes risk classifier",
    "HIV test results table must be encrypted",
    "Our customers' credit scores are stored in the risk table",
    "The app tracks medication reminders",
    "Patients table has a diagnosis column",
    "Diagnosis codes follow ICD-10",
    "Use the diagnosis field from the FHIR resource",
    "Stripe charges 2.9% + 30 cents",
    "the patient portal uses OAuth",
    "Email me at sam@example.com",
    # sentences about passwords
    "reset your password in settings",
    "Reset your password in Settings > Security",
    "The password field is required",
    "I forgot my password",
    "I forgot my password again, can you remind me how the reset flow works?",
    "use a password manager",
    "Use a password manager like Bitwarden or 1Password",
    "The password must be at least 12 characters long",
    "Passwords are hashed with bcrypt (cost 12)",
    "Password reset emails expire after 24 hours",
    "Never share your password with anyone",
    "Change the default password after the first login",
    "The password for the staging DB is in the team vault",
    "The password is stored in 1Password under 'Prod DB'",
    "Enter your password to continue",
    "Password: use the one from Bitwarden",
    "password protected zip files are not supported",
    "Add a show/hide toggle to the password input",
    "The login form posts username and password over HTTPS",
    "sudo asks for my password every 15 minutes",
    "run passwd to change your password",
    "sudo passwd root",
    "The passwd file lists users, not passwords",
    "pwd prints the working directory",
    "The password hash uses argon2id with 64 MiB of memory",
    "Password strength: at least one digit, one uppercase letter and one symbol",
    "Passwords like P@ssw0rd or Summer2024! are the first ones attackers try",
    "Password rotation every 90 days is required by the auditors",
    "If you forget your password, click 'Forgot password?'",
    "The Wi-Fi password is on the fridge",
    "The password for the VPN is the same as last year",
    "My password was leaked in a breach, so I changed it",
    "Two-factor auth replaces SMS codes, not passwords",
    "password_reset_token expires in 1 hour",
    "Use PBKDF2 or scrypt for password storage",
    "The password policy requires 14 characters",
    "Don't put passwords in commit messages",
    "Store the DB password in the DB_PASSWORD environment variable",
    "Passkeys are replacing passwords on most sites",
    "Login with password is disabled; use SSH keys",
    "Ask for the password twice on the signup form",
    "Check the password against the Have I Been Pwned API",
    "A password of 8 characters can be brute-forced quickly",
    "Set PASSWORD_MIN_LENGTH to 12",
    "The pw field is masked",
    "pw and pwd are common abbreviations for password",
    "sudo password prompts time out after 5 minutes",
    "log in to prod with your SSO account, not a password",
    "The admin password is rotated weekly by Vault",
    "Password for prod db: ask Alice",
    "Password for prod db = see 1Password",
    "mot de passe oublié",
    "Passwort vergessen? Klicken Sie hier",
    "password: ${DB_PASSWORD}",
    "Password = os.environ['DB_PASSWORD']",
    'The password input has autocomplete="current-password"',
    "passwordless login via magic links",
    "Rotate the root password and the API keys after the incident",
    "The password hint says 'first pet + year'",
    "Users can change their password from the profile page",
    "P@ssw0rd is a weak password",
    "hunter2 is a famous example password",
    "pass -Xmx2G to the JVM",
    "creds: see the team vault",
    "log in as admin to see the settings page",
    "The secret for success is consistency",
    "secret = load_secret()",
    # provider names, labels and prefixes without a secret
    "We send metrics to Datadog and errors to Sentry",
    "Datadog API key: stored in Vault",
    "DATADOG_API_KEY=${DATADOG_API_KEY}",
    "heroku app id: 123e4567-e89b-12d3-a456-426614174000",
    "Cloudflare zone id: 023e105f4ecef8ad9ca31a8372d0c353",
    "sourcegraph commit: 9fceb02d0ae598e95dc970b74767f19372d61af8",
    "Sentry release: 3f2a9c1",
    "LTAI is the prefix of Alibaba access key ids",
    "dapi tokens are created in the Databricks user settings",
    "Linear issue ENG-1234 tracks the flaky test",
    "The Jira ticket is PROJ-4521",
    "Octopus API keys look like API-XXXXXXXXXXXXXXXXXXXXXXXXXX",
    "API-GATEWAYCONFIGURATIONSERVICE",
    "oc whoami -t prints a sha256~ token",
    "v1.0-rc1 was released on Monday",
    "dp.pt. tokens are personal Doppler tokens",
    "The Slack, Jira and Confluence integrations are enabled",
    "secret_key_base is set per environment",
    "The vault is sealed after a restart",
    "private ai models run on-prem",
    "Twitter handle: @eonyx_app",
    "Algolia index name: products_en",
    "GitLab session cookies expire after a week",
    "Grafana API keys start with eyJrIjoi",
    "kind: Secret\ndata: {}",
    "curl -u $USER:$TOKEN https://api.example.com",
    "curl -u user:password https://example.com",
    '<add key="Password" value="" />',
    '<add key="PageSize" value="50" />',
    "A Kubernetes Secret stores values in base64 under data:",
    # base64 that is not a private key, and passwords as a topic in four languages
    "cert: " + der_body(b"\x30\x82\x03\x77\x30\x82\x02\x5f\xa0\x03\x02\x01\x02", 880),
    "public key: " + der_body(b"\x30\x82\x01\x22\x30\x0d\x06\x09\x2a\x86\x48\x86\xf7", 280),
    "rsa public: " + der_body(b"\x30\x82\x01\x0a\x02\x82\x01\x01\x00", 260),
    "logo: data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhf"
    "DwAChwGA60e6kgAAAABJRU5ErkJggg==",
    "MIT licensed; MIDI input works; MII is a Roman numeral",
    "base64 of hello is aGVsbG8=, of MIME is TUlNRQ==",
    "Le mot de passe doit contenir au moins 12 caractères.",
    "Le mot de passe est changé tous les 90 jours.",
    "Mon mot de passe est dans le gestionnaire de mots de passe.",
    "mdp oublié : cliquer sur « Mot de passe oublié ? »",
    "Das Passwort muss mindestens 12 Zeichen lang sein.",
    "Das Passwort ist im Tresor gespeichert.",
    "Das Kennwort für den Server wird jeden Monat geändert.",
    "La contraseña debe tener al menos 12 caracteres.",
    "La clave es la paciencia.",
    "La contraseña del servidor es secreta.",
    "The admin password is stored in Vault.",
    "The password manager is 1Password.",
]
