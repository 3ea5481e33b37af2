"""Credential rules recognised by the token alone: key material and the known token formats
of cloud providers, code hosts, chat platforms, payment and messaging services, registries and
vaults, and LLM providers (see the package docstring for the list, in check order).
"""

from __future__ import annotations

import base64
import binascii
import re

from shared.safety.engine import (
    WORDCHAR,
    RuleTable,
    Scan,
    b64_decode,
    is_filler,
    letters_and_digits,
)

TABLE = RuleTable()


def _discord_valid(token: str) -> bool:
    user_id = b64_decode(token.split(".", 1)[0])
    return user_id is not None and user_id.isdigit() and 17 <= len(user_id) <= 20


# --- credentials: key material ----------------------------------------------------------------

TABLE.token(
    "gcp_service_account_key",
    "a Google Cloud service-account key",
    r'"private_key"\s*:\s*"-----BEGIN[A-Z ]*PRIVATE KEY-----(?:\\n|\s)*([A-Za-z0-9+/]{24,})',
    group=1,
)
TABLE.token(
    "gcp_service_account_key",
    "a Google Cloud service-account key",
    r'"private_key_id"\s*:\s*"([0-9a-f]{40})"',
    needles=('"service_account"',),
    group=1,
)
# Key material after the header (the header line alone is harmless to mention).
TABLE.token(
    "private_key_block",
    "a private key",
    r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----(?s:.){0,300}?([A-Za-z0-9+/]{24,})",
    group=1,
)
TABLE.token(
    "private_key_block",
    "a private key (PuTTY format)",
    r"PuTTY-User-Key-File-\d:(?s:.){0,3000}?Private-Lines:\s*\d+\s+([A-Za-z0-9+/]{24,})",
    group=1,
)
TABLE.token("age_secret_key", "an age secret key", r"AGE-SECRET-KEY-1[0-9A-Z]{58}")

# The base64 body of a private key without its armour: a DER SEQUENCE ("M" then A-I in
# base64) whose first fields are those of a private key, or an OpenSSH key ("openssh-key-v1").
# Certificates and public keys (a SEQUENCE that opens with another SEQUENCE, or a public RSA
# key's modulus) pass, and so do hashes, UUIDs and base64 that decodes to anything else.
_KEY_BODY_RE = re.compile(r"(?:M[A-I]|b3BlbnNzaC1rZXktdjE)[A-Za-z0-9+/]{14}")
_KEY_BODY_CHARS_RE = re.compile(r"[A-Za-z0-9+/]+(?:(?:\\n|\s)+[A-Za-z0-9+/]{4,})*")
_KEY_BODY_MIN = 60  # base64 characters: an Ed25519 PKCS#8 key is 64
_OPENSSH_KEY = b"openssh-key-v1\x00"
_PRIVATE_FIELDS = (
    b"\x02\x01\x00\x02",  # PKCS#1 RSA, DSA: version 0, then the modulus or p
    b"\x02\x01\x00\x30",  # PKCS#8: version 0, then the algorithm
    b"\x02\x01\x01\x30",  # PKCS#8 v2 (OneAsymmetricKey)
    b"\x02\x01\x01\x04",  # SEC1 EC: version 1, then the private key octets
    b"\x02\x01\x03\x30",  # PKCS#12: version 3, then the content
)
_ENCRYPTED_KEY_OIDS = (  # EncryptedPrivateKeyInfo: PBES2, or a PKCS#12 PBE scheme
    b"\x06\x09\x2a\x86\x48\x86\xf7\x0d\x01\x05\x0d",
    b"\x06\x0a\x2a\x86\x48\x86\xf7\x0d\x01\x0c\x01",
)


def _der_body(der: bytes) -> int:
    """Where the contents of the DER element at the start of `der` begin (0 if not one)."""
    if len(der) < 2:
        return 0
    size = der[1]
    if size < 0x80:
        return 2
    return 2 + (size & 0x7F) if 0x81 <= size <= 0x84 else 0


def _private_key_der(der: bytes) -> bool:
    if der.startswith(_OPENSSH_KEY):
        return True
    start = _der_body(der) if der[:1] == b"\x30" else 0
    if not start:
        return False
    fields = der[start:]
    if fields.startswith(_PRIVATE_FIELDS):
        return True
    inner = _der_body(fields) if fields[:1] == b"\x30" else 0
    return bool(inner) and fields[inner:].startswith(_ENCRYPTED_KEY_OIDS)


def _key_body(scan: Scan) -> bool:
    text = scan.ascii
    for match in _KEY_BODY_RE.finditer(text):
        start = match.start()
        if start and (text[start - 1].isalnum() or text[start - 1] in "+/"):
            continue  # inside a longer base64 run or a word
        run = _KEY_BODY_CHARS_RE.match(text, start)
        assert run is not None
        body = "".join(run.group(0).replace("\\n", " ").split())
        if len(body) < _KEY_BODY_MIN:
            continue
        try:
            der = base64.b64decode(body[:64], validate=True)
        except (binascii.Error, ValueError):
            continue
        if _private_key_der(der):
            return True
    return False


TABLE.add("private_key_body", "a private key (its body, without the armour)", _key_body)

# --- credentials: cloud providers -------------------------------------------------------------

TABLE.token(
    "aws_access_key",
    "an AWS access key ID",
    r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}(?![A-Za-z0-9])",
    needles=("AKIA", "ASIA", "ABIA", "ACCA", "A3T"),
    boundary=True,
)
TABLE.token(
    "aws_secret_key",
    "an AWS secret access key",
    r"secret[_.\- ]?(?:access)?[_.\- ]?key[\"']?\s*(?:[:=]|=>)\s*[\"']?"
    r"([a-z0-9/+]{40})(?![a-z0-9/+=])",
    needles=("secret",),
    lower=True,
    group=1,
    valid=letters_and_digits,
)
TABLE.token(
    "google_api_key",
    "a Google API key",
    r"AIza[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])",
    boundary=True,
)
TABLE.token(
    "google_oauth_secret",
    "a Google OAuth client secret",
    r"GOCSPX-[0-9A-Za-z_\-]{28}",
)
TABLE.token(
    "google_oauth_secret",
    "a Google OAuth token",
    r"ya29\.[0-9A-Za-z_\-]{40,}|1//0[0-9A-Za-z_\-]{40,}",
    needles=("ya29.", "1//0"),
    boundary=True,
)
TABLE.token(
    "azure_storage_key",
    "an Azure storage account key or shared access key",
    r"(?:accountkey|sharedaccesskey|primarykey|secondarykey)\s*=\s*([a-z0-9+/]{40,}={0,2})",
    needles=("accountkey", "sharedaccesskey", "primarykey", "secondarykey"),
    lower=True,
    group=1,
)
TABLE.token(
    "azure_sas_token",
    "an Azure shared access signature",
    r"sv=\d{4}-\d\d-\d\d&[^\s\"']{0,300}?\bsig=([A-Za-z0-9%+/]{30,}={0,2})",
    needles=("sig=",),
    group=1,
)
TABLE.token(
    "azure_client_secret",
    "an Azure AD client secret",
    r"[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}(?![A-Za-z0-9_~.\-])",
    needles=("Q~",),
    boundary=True,
)

# --- credentials: code hosts ------------------------------------------------------------------

TABLE.token(
    "github_token",
    "a GitHub token",
    r"gh[pousr]_[A-Za-z0-9]{36,251}(?![A-Za-z0-9])",
    boundary=True,
)
TABLE.token(
    "github_token",
    "a GitHub fine-grained token",
    r"github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}",
    boundary=True,
)
TABLE.token(
    "gitlab_token",
    "a GitLab token",
    r"gl(?:pat|dt|rt|ptt|cbt|imt|agent|oas|ft|soat|ffct|wt|ddt)-[A-Za-z0-9_\-.]{20,}",
    boundary=True,
)
TABLE.token("gitlab_token", "a GitLab runner token", r"GR1348941[A-Za-z0-9_\-]{20,}")
TABLE.token(
    "bitbucket_app_password",
    "a Bitbucket app password",
    r"ATBB[A-Za-z0-9_=.\-]{28,}",
    boundary=True,
)
TABLE.token(
    "atlassian_api_token",
    "an Atlassian API token",
    r"AT(?:ATT|CTT)3[A-Za-z0-9_=\-]{60,}",
    boundary=True,
)

# --- credentials: chat platforms --------------------------------------------------------------

TABLE.token("slack_token", "a Slack token", r"xox[abposre]-[0-9A-Za-z\-]{20,}", boundary=True)
TABLE.token(
    "slack_token",
    "a Slack configuration token",
    r"xoxe\.xox[bp]-\d-[A-Za-z0-9]{100,}",
    boundary=True,
)
TABLE.token(
    "slack_token",
    "a Slack app token",
    r"xapp-\d-[A-Z0-9]{6,}-\d{6,}-[a-z0-9]{20,}",
    boundary=True,
)
TABLE.token(
    "slack_webhook",
    "a Slack webhook URL",
    r"hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9_/+\-]{30,})",
    group=1,
)
TABLE.token(
    "discord_webhook",
    "a Discord webhook URL",
    r"discord(?:app)?\.com/api/webhooks/\d{17,20}/([A-Za-z0-9_\-]{60,})",
    group=1,
)
_TOKEN_CHARS = WORDCHAR | {"-"}
_DISCORD_TAIL = re.compile(r"\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,40}(?![A-Za-z0-9_\-])")
_DISCORD_HEAD = re.compile(r"[MNO][A-Za-z0-9_\-]{22,27}\Z")


def _discord_bot_token(scan: Scan) -> bool:
    text = scan.ascii
    for tail in _DISCORD_TAIL.finditer(text):
        head = _DISCORD_HEAD.search(text, max(0, tail.start() - 28), tail.start())
        if head is None or head.start() and text[head.start() - 1] in _TOKEN_CHARS:
            continue
        token = text[head.start() : tail.end()]
        if not is_filler(token) and _discord_valid(token):
            return True
    return False


TABLE.add("discord_bot_token", "a Discord bot token", _discord_bot_token)
TABLE.token(
    "telegram_bot_token",
    "a Telegram bot token",
    r"(?<![\d:])\d{8,10}:A[A-Za-z0-9_\-]{32,34}(?![A-Za-z0-9_\-])",
    needles=(":A",),
)

# --- credentials: payments, messaging, commerce -----------------------------------------------

TABLE.token(
    "stripe_key",
    "a Stripe secret or restricted key",
    r"[sr]k_(?:live|test|prod)_[A-Za-z0-9]{20,247}",
    needles=("k_live_", "k_test_", "k_prod_"),
    boundary=True,
)
TABLE.token("stripe_key", "a Stripe webhook secret", r"whsec_[A-Za-z0-9]{32,}", boundary=True)
TABLE.token(
    "twilio_api_key",
    "a Twilio API key",
    r"SK[0-9a-f]{32}(?![0-9A-Za-z])",
    boundary=True,
)
TABLE.token(
    "twilio_api_key",
    "a Twilio auth token",
    r"twilio[\w .\-]{0,30}?(?:auth[_ \-]?token|token|secret)[\"']?\s*(?:[:=]|=>|is)?\s*"
    r"[\"']?([0-9a-f]{32})\b",
    needles=("twilio",),
    lower=True,
    group=1,
)
TABLE.token(
    "sendgrid_api_key",
    "a SendGrid API key",
    r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}(?![A-Za-z0-9_\-])",
    boundary=True,
)
TABLE.token(
    "mailgun_api_key",
    "a Mailgun API key",
    r"key-[0-9a-f]{32}(?![0-9A-Za-z])",
    boundary=True,
)
TABLE.token(
    "mailgun_api_key",
    "a Mailgun API key",
    r"mailgun[\w .\-\"':=]{0,40}?\b([0-9a-f]{32}-[0-9a-f]{8}-[0-9a-f]{8})\b",
    needles=("mailgun",),
    lower=True,
    group=1,
)
TABLE.token(
    "shopify_token",
    "a Shopify access token",
    r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}",
    boundary=True,
)

# --- credentials: registries and vaults -------------------------------------------------------

TABLE.token(
    "npm_token", "an npm access token", r"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])", boundary=True
)
TABLE.token(
    "pypi_token",
    "a PyPI API token",
    r"pypi-(?:AgEIcHlwaS5vcmc|AgENdGVzdC5weXBpLm9yZw)[A-Za-z0-9_\-]{50,}",
    boundary=True,
)
TABLE.token(
    "docker_hub_token",
    "a Docker Hub access token",
    r"dckr_(?:pat|oat)_[A-Za-z0-9_\-]{27,}",
    boundary=True,
)
TABLE.token(
    "vault_token", "a HashiCorp Vault token", r"hv[sbr]\.[A-Za-z0-9_\-]{24,}", boundary=True
)

# --- credentials: LLM providers ---------------------------------------------------------------

TABLE.token(
    "anthropic_api_key",
    "an Anthropic API key",
    r"sk-ant-[a-z]{2,6}\d{2}-[A-Za-z0-9_\-]{32,}",
    boundary=True,
)
TABLE.token(
    "openrouter_api_key",
    "an OpenRouter API key",
    r"sk-or-v\d-[0-9a-f]{64}",
    boundary=True,
)
TABLE.token(
    "openai_api_key",
    "an OpenAI-style API key (sk-...)",
    r"sk-(?:(?:proj|svcacct|admin|None)-[A-Za-z0-9_\-]{40,}"
    r"|[A-Za-z0-9_\-]{20,}T3BlbkFJ[A-Za-z0-9_\-]{20,}"
    r"|[A-Za-z0-9]{32,}(?![A-Za-z0-9_\-]))",
    boundary=True,
)
TABLE.token(
    "huggingface_token",
    "a Hugging Face token",
    r"hf_[A-Za-z]{34,40}(?![A-Za-z0-9])",
    boundary=True,
)
TABLE.token(
    "huggingface_token",
    "a Hugging Face organization token",
    r"api_org_[A-Za-z]{34,40}(?![A-Za-z0-9])",
    boundary=True,
)
TABLE.token("groq_api_key", "a Groq API key", r"gsk_[A-Za-z0-9]{52}(?![A-Za-z0-9])", boundary=True)
TABLE.token("xai_api_key", "an xAI API key", r"xai-[A-Za-z0-9]{70,}", boundary=True)
TABLE.token("perplexity_api_key", "a Perplexity API key", r"pplx-[A-Za-z0-9]{40,}", boundary=True)
TABLE.token(
    "replicate_api_token",
    "a Replicate API token",
    r"r8_[A-Za-z0-9]{37}(?![A-Za-z0-9])",
    boundary=True,
)
TABLE.token(
    "cohere_api_key",
    "a Cohere API key",
    r"(?:cohere|co_api_key)[\w .\-]{0,20}?[\"']?\s*(?:[:=]|=>|is)\s*[\"']?([a-z0-9]{40})\b",
    needles=("cohere", "co_api_key"),
    lower=True,
    group=1,
    valid=letters_and_digits,
)
