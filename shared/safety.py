"""The memory safety filter: whether a text may be written to memory by the assistant.

Every automated memory write (the inline memory tools, background extraction, curation) runs
its text through `check_text` or `ensure_safe` first; the operator's own edits do not.

The filter is deterministic: a verdict depends on the text alone (no randomness, clock,
network, environment or model), so the same text always gets the same verdict. It is pure:
it reads nothing, writes nothing and logs nothing. A refusal names a stable rule id and a
fixed description of the kind of thing found ("a GitHub token"); it never contains the text
or any part of it, so a refusal can be logged or shown to the model safely.

Rules, in the order they are tried (the first that matches is reported; `RULES` maps each id
to its description):

Credentials
    gcp_service_account_key, private_key_block, age_secret_key       key material
    aws_access_key, aws_secret_key, google_api_key, google_oauth_secret, azure_storage_key,
    azure_sas_token, azure_client_secret                             cloud providers
    github_token, gitlab_token, bitbucket_app_password, atlassian_api_token      code hosts
    slack_token, slack_webhook, discord_bot_token, discord_webhook, telegram_bot_token
    stripe_key, twilio_api_key, sendgrid_api_key, mailgun_api_key, shopify_token
    npm_token, pypi_token, docker_hub_token, vault_token
    anthropic_api_key, openrouter_api_key, openai_api_key (any sk- key of 32+ characters),
    huggingface_token, groq_api_key, xai_api_key, perplexity_api_key,
    replicate_api_token, cohere_api_key (no prefix: only next to "cohere"/"CO_API_KEY")
    jwt                            three base64url parts whose header is JSON with "alg"
    connection_string_credentials  scheme://user:password@host
    authorization_header           Authorization: Bearer/Basic/Token <credential>
    password_assignment            a password, secret, token or API key given a literal value:
                                   KEY=value, "key": "value", KEY: value, export KEY=...,
                                   "my password is ...", "my PIN is 1234", mysql -p<password>
Sensitive personal data
    payment_card     13-19 digits (spaces or dashes allowed) passing Luhn (stdnum.luhn) with
                     the issuer prefix and length of a real card brand
    iban             upper-case, the country's length, passing mod-97 and the country's
                     format (stdnum.iban, whose SWIFT registry also gives the lengths)
    us_ssn           123-45-6789 outside the never-issued ranges (stdnum.us.ssn), or nine
                     digits near "SSN" / "social security number"
    national_id      near a context word (about 60 characters), validated by stdnum: UK
                     National Insurance number (format only: stdnum has none), UK NHS
                     number, Dutch BSN, German Steuer-ID, French NIR, Spanish DNI/NIE,
                     Italian codice fiscale, Indian Aadhaar, Canadian SIN, Brazilian CPF,
                     Polish PESEL, Swedish personnummer
    health_fact      a person (I, he, she, they, the user, my wife, a name ...) with a
                     diagnosis, condition, medication, provider, procedure, or "my <health
                     record>"; "the service handles diabetes data" passes; "allergic to"
                     counts whatever follows ("he's allergic to meetings" is blocked)
    financial_fact   a person's salary, income, rent, debt, savings, balance, credit score
                     with an amount, bankruptcy, eviction, arrears; "prices are $20/month"
                     and "the salary field is an integer" pass; "we"/"our" (a company) pass

Passes on purpose: preferences, code identifiers (`get_api_key()`, `password_hash`,
`SECRET_KEY_SETTING_NAME`), hashes, UUIDs, versions, dates, prices, ports, paths, ordinary
URLs, numbers failing their checksum, and placeholders. A placeholder is a token that is not
full length (`sk-...`), is visibly filler (`ghp_xxxx...`: fewer than five distinct
characters at its end, or EXAMPLE / xxxx / an ellipsis in it), a template or a variable
(`<your-api-key>`, `${DB_PASSWORD}`, `$TOKEN`, `{{ secrets.X }}`), a type (`password: str`)
or an expression (`password=os.environ["PW"]`, `api_key=api_key`). Test card numbers
(4242 4242 4242 4242) are blocked like any other valid card number.

Known limits: a secret with no known prefix and no telling key (a bare random string) passes,
as it cannot be told from a hash; an unquoted password in prose or code needs a digit, a
symbol or mixed case ("my password is sunshine" passes) unless its key is UPPER_CASE
(env-style: DB_PASSWORD=changeme is blocked); a password glued to a CLI flag is caught for
mysql only; lower-case IBANs pass; the health and financial rules are English keyword lists
(paraphrases and other languages pass); national ids other than SSNs need their context
word; passport and driving-licence numbers (no checksum) are not detected.

The token formats are written here for today's formats; detect-secrets is not used (no
release since 2024). Speed: each rule is gated cheaply (a literal prefix the regex engine
skips to, a substring, the set of words, the digit count), ASCII-only patterns run on an
ASCII copy of the text, numbers and IBANs are found by their shape ("0000", "AA00" in a copy
with digits as 0 and letters as A/a), and the fact rules run in windows around their anchor
words, case-sensitively on the lower-case text. bench/bench_filter.py measures about 0.1 ms
per 1.2 KB chat text on a 2-core machine.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import string
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from stdnum import iban as std_iban
from stdnum import luhn, numdb
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

from shared.errors import InvalidInput

__all__ = ["RULES", "SafetyError", "Verdict", "check_text", "ensure_safe"]


@dataclass(frozen=True)
class Verdict:
    """The filter's answer. `rule` and `reason` are None when the text is allowed."""

    allowed: bool
    rule: str | None = None
    reason: str | None = None


ALLOWED = Verdict(True)


class SafetyError(InvalidInput):
    """A write refused by the filter. The message names the rule, never the text."""

    code = "blocked_by_filter"

    def __init__(self, verdict: Verdict) -> None:
        super().__init__(
            f"blocked by the safety filter (rule {verdict.rule}): the text contains "
            f"{verdict.reason}; leave it out"
        )
        self.rule = verdict.rule
        self.reason = verdict.reason


def check_text(text: str) -> Verdict:
    """The verdict for `text`: allowed, or the first rule (in table order) that blocks it."""
    if not isinstance(text, str):
        raise TypeError("check_text takes a str")
    if not text:
        return ALLOWED
    scan = _Scan(_normalize(text))
    for rule in _TABLE:
        if rule.detect(scan):
            return Verdict(False, rule.id, rule.reason)
    return ALLOWED


def ensure_safe(text: str) -> None:
    """Raise SafetyError if `text` may not be written to memory."""
    verdict = check_text(text)
    if not verdict.allowed:
        raise SafetyError(verdict)


# --- the text, with what several rules need computed once -----------------------------------

_FOLD = (
    ("\u00ad", ""),
    ("\u200b", ""),
    ("\u200c", ""),
    ("\u200d", ""),
    ("\u2060", ""),
    ("\ufeff", ""),
    ("\u2018", "'"),
    ("\u2019", "'"),
    ("\u201c", '"'),
    ("\u201d", '"'),
)


def _normalize(text: str) -> str:
    """Fold look-alike characters (full-width digits, zero-width joiners, curly quotes)."""
    if text.isascii():
        return text
    text = unicodedata.normalize("NFKC", text)
    for char, replacement in _FOLD:
        if char in text:
            text = text.replace(char, replacement)
    return text


# bytes.translate is a table lookup per byte; str.translate with a dict is far slower once a
# text holds one non-ASCII character. Words are compared as UTF-8 bytes.
_TO_SPACE = bytes.maketrans(
    (string.punctuation + "\t\n\r\f\v").encode(), b" " * len(string.punctuation + "\t\n\r\f\v")
)


_SHAPE = bytes.maketrans(
    (string.digits + string.ascii_uppercase + string.ascii_lowercase).encode(),
    b"0" * 10 + b"A" * 26 + b"a" * 26,
)


def _word_set(words: str) -> frozenset[bytes]:
    return frozenset(w.encode() for w in words.split())


class _Scan:
    """The text and, computed on first use, its lower-case form, words and digit count."""

    __slots__ = ("text", "ascii", "_low", "_low_ascii", "_shape", "_words", "_digits")

    def __init__(self, text: str) -> None:
        self.text = text
        # The same text with every non-ASCII character as "?": same length, same positions,
        # and the regex engine is much faster on one-byte strings. Rules whose patterns are
        # ASCII-only (tokens, cards, IBANs, SSNs) search this one.
        self.ascii = text if text.isascii() else text.encode("ascii", "replace").decode()
        self._low: str | None = None
        self._low_ascii: str | None = None
        self._shape: bytes | None = None
        self._words: frozenset[bytes] | None = None
        self._digits = -1

    @property
    def low(self) -> str:
        """The lower-case text, with the same length (so positions map one to one)."""
        if self._low is None:
            low = self.text.lower()
            if len(low) != len(self.text):  # a few characters lower-case to two
                low = "".join(c if len(c.lower()) != 1 else c.lower() for c in self.text)
            self._low = low
        return self._low

    @property
    def low_ascii(self) -> str:
        if self._low_ascii is None:
            self._low_ascii = self.ascii.lower()
        return self._low_ascii

    @property
    def shape(self) -> bytes:
        """The ASCII text with every digit as 0 and every letter as A or a: a number's or an
        IBAN's shape is then found by a plain substring search ("0000", "AA00")."""
        if self._shape is None:
            self._shape = self.ascii.encode().translate(_SHAPE)
        return self._shape

    def starts(self, shape: bytes) -> list[int]:
        """Where `shape` occurs in the text's shape at the start of a run (not mid-run)."""
        found, sh = [], self.shape
        i = sh.find(shape)
        while i != -1:
            if not i or sh[i - 1] != shape[0]:
                found.append(i)
            i = sh.find(shape, i + 1)
        return found

    @property
    def words(self) -> frozenset[bytes]:
        """The lower-case words (UTF-8), split at white space and ASCII punctuation."""
        if self._words is None:
            self._words = frozenset(self.low.encode().translate(_TO_SPACE).split())
        return self._words

    @property
    def digits(self) -> int:
        if self._digits < 0:
            text = self.text
            self._digits = sum(text.count(d) for d in string.digits)
        return self._digits

    def windows(self, anchors: Iterable[bytes], before: int, after: int) -> list[tuple[int, int]]:
        """Merged spans of the text around every whole-word occurrence of the anchors."""
        low, text = self.low, self.text
        spans: list[tuple[int, int]] = []
        for anchor in anchors:
            word = anchor.decode()
            i = low.find(word)
            while i != -1:
                j = i + len(word)
                if (not i or not low[i - 1].isalnum()) and (j == len(low) or not low[j].isalnum()):
                    spans.append((max(0, i - before), min(len(text), j + after)))
                i = low.find(word, j)
        spans.sort()
        merged: list[tuple[int, int]] = []
        for start, end in spans:
            if merged and start <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
            else:
                merged.append((start, end))
        return merged


# --- the rule table --------------------------------------------------------------------------

Detector = Callable[[_Scan], bool]


@dataclass(frozen=True)
class _Rule:
    id: str
    reason: str
    detect: Detector


RULES: dict[str, str] = {}  # rule id -> what it finds, in check order
_TABLE: list[_Rule] = []


def _rule(rule_id: str, reason: str, detect: Detector) -> None:
    RULES.setdefault(rule_id, reason)
    _TABLE.append(_Rule(rule_id, reason, detect))


_FILLER_RE = re.compile(r"(?i)example|xxxx|\.\.\.|\u2026|<|>|your[_-]")
_WORDCHAR = frozenset(string.ascii_letters + string.digits + "_")


def _is_filler(token: str) -> bool:
    """A full-length token that is visibly a placeholder (documentation, redaction)."""
    return len(set(token[-20:].lower())) < 5 or bool(_FILLER_RE.search(token))


def _token_rule(
    rule_id: str,
    reason: str,
    pattern: str,
    *,
    needles: tuple[str, ...] = (),
    lower: bool = False,
    boundary: bool = False,
    group: int = 0,
    valid: Callable[[str], bool] | None = None,
) -> None:
    """A rule for a token with a recognisable shape.

    The pattern should start with a literal (the regex engine then skips to it quickly);
    `needles` gate the rule on substrings of the text; with `lower`, needles and pattern are
    lower-case and run on the lower-case text (the value is read from the original);
    `boundary` requires the match not to continue a word on its left.
    """
    compiled = re.compile(pattern)
    search = compiled.search

    def detect(scan: _Scan) -> bool:
        if needles:
            haystack = scan.low if lower else scan.text
            for needle in needles:
                if needle in haystack:
                    break
            else:
                return False
        text = scan.ascii
        haystack = scan.low_ascii if lower else text
        match = search(haystack)
        while match is not None:
            start = match.start()
            if not (boundary and start and text[start - 1] in _WORDCHAR):
                span = match.span(group) if match.group(group) else match.span()
                value = text[span[0] : span[1]]
                if not _is_filler(value) and (valid is None or valid(value)):
                    return True
            match = search(haystack, start + 1)
        return False

    _rule(rule_id, reason, detect)


def _b64_decode(part: str) -> bytes | None:
    try:
        return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except (binascii.Error, ValueError):
        return None


def _jwt_valid(token: str) -> bool:
    raw = _b64_decode(token.split(".", 1)[0])
    try:
        header = json.loads(raw) if raw else None
    except (ValueError, UnicodeDecodeError):
        return False
    return isinstance(header, dict) and isinstance(header.get("alg"), str)


def _discord_valid(token: str) -> bool:
    user_id = _b64_decode(token.split(".", 1)[0])
    return user_id is not None and user_id.isdigit() and 17 <= len(user_id) <= 20


def _letters_and_digits(value: str) -> bool:
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


# --- credentials: key material ----------------------------------------------------------------

_token_rule(
    "gcp_service_account_key",
    "a Google Cloud service-account key",
    r'"private_key"\s*:\s*"-----BEGIN[A-Z ]*PRIVATE KEY-----(?:\\n|\s)*([A-Za-z0-9+/]{24,})',
    group=1,
)
_token_rule(
    "gcp_service_account_key",
    "a Google Cloud service-account key",
    r'"private_key_id"\s*:\s*"([0-9a-f]{40})"',
    needles=('"service_account"',),
    group=1,
)
# Key material after the header (the header line alone is harmless to mention).
_token_rule(
    "private_key_block",
    "a private key",
    r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----(?s:.){0,300}?([A-Za-z0-9+/]{24,})",
    group=1,
)
_token_rule(
    "private_key_block",
    "a private key (PuTTY format)",
    r"PuTTY-User-Key-File-\d:(?s:.){0,3000}?Private-Lines:\s*\d+\s+([A-Za-z0-9+/]{24,})",
    group=1,
)
_token_rule("age_secret_key", "an age secret key", r"AGE-SECRET-KEY-1[0-9A-Z]{58}")

# --- credentials: cloud providers -------------------------------------------------------------

_token_rule(
    "aws_access_key",
    "an AWS access key ID",
    r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}(?![A-Za-z0-9])",
    needles=("AKIA", "ASIA", "ABIA", "ACCA", "A3T"),
    boundary=True,
)
_token_rule(
    "aws_secret_key",
    "an AWS secret access key",
    r"secret[_.\- ]?(?:access)?[_.\- ]?key[\"']?\s*(?:[:=]|=>)\s*[\"']?"
    r"([a-z0-9/+]{40})(?![a-z0-9/+=])",
    needles=("secret",),
    lower=True,
    group=1,
    valid=_letters_and_digits,
)
_token_rule(
    "google_api_key",
    "a Google API key",
    r"AIza[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])",
    boundary=True,
)
_token_rule(
    "google_oauth_secret",
    "a Google OAuth client secret",
    r"GOCSPX-[0-9A-Za-z_\-]{28}",
)
_token_rule(
    "google_oauth_secret",
    "a Google OAuth token",
    r"ya29\.[0-9A-Za-z_\-]{40,}|1//0[0-9A-Za-z_\-]{40,}",
    needles=("ya29.", "1//0"),
    boundary=True,
)
_token_rule(
    "azure_storage_key",
    "an Azure storage account key or shared access key",
    r"(?:accountkey|sharedaccesskey|primarykey|secondarykey)\s*=\s*([a-z0-9+/]{40,}={0,2})",
    needles=("accountkey", "sharedaccesskey", "primarykey", "secondarykey"),
    lower=True,
    group=1,
)
_token_rule(
    "azure_sas_token",
    "an Azure shared access signature",
    r"sv=\d{4}-\d\d-\d\d&[^\s\"']{0,300}?\bsig=([A-Za-z0-9%+/]{30,}={0,2})",
    needles=("sig=",),
    group=1,
)
_token_rule(
    "azure_client_secret",
    "an Azure AD client secret",
    r"[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}(?![A-Za-z0-9_~.\-])",
    needles=("Q~",),
    boundary=True,
)

# --- credentials: code hosts ------------------------------------------------------------------

_token_rule(
    "github_token",
    "a GitHub token",
    r"gh[pousr]_[A-Za-z0-9]{36,251}(?![A-Za-z0-9])",
    boundary=True,
)
_token_rule(
    "github_token",
    "a GitHub fine-grained token",
    r"github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}",
    boundary=True,
)
_token_rule(
    "gitlab_token",
    "a GitLab token",
    r"gl(?:pat|dt|rt|ptt|cbt|imt|agent|oas|ft|soat|ffct|wt|ddt)-[A-Za-z0-9_\-.]{20,}",
    boundary=True,
)
_token_rule("gitlab_token", "a GitLab runner token", r"GR1348941[A-Za-z0-9_\-]{20,}")
_token_rule(
    "bitbucket_app_password",
    "a Bitbucket app password",
    r"ATBB[A-Za-z0-9_=.\-]{28,}",
    boundary=True,
)
_token_rule(
    "atlassian_api_token",
    "an Atlassian API token",
    r"AT(?:ATT|CTT)3[A-Za-z0-9_=\-]{60,}",
    boundary=True,
)

# --- credentials: chat platforms --------------------------------------------------------------

_token_rule("slack_token", "a Slack token", r"xox[abposre]-[0-9A-Za-z\-]{20,}", boundary=True)
_token_rule(
    "slack_token",
    "a Slack configuration token",
    r"xoxe\.xox[bp]-\d-[A-Za-z0-9]{100,}",
    boundary=True,
)
_token_rule(
    "slack_token",
    "a Slack app token",
    r"xapp-\d-[A-Z0-9]{6,}-\d{6,}-[a-z0-9]{20,}",
    boundary=True,
)
_token_rule(
    "slack_webhook",
    "a Slack webhook URL",
    r"hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9_/+\-]{30,})",
    group=1,
)
_token_rule(
    "discord_webhook",
    "a Discord webhook URL",
    r"discord(?:app)?\.com/api/webhooks/\d{17,20}/([A-Za-z0-9_\-]{60,})",
    group=1,
)
_TOKEN_CHARS = _WORDCHAR | {"-"}
_DISCORD_TAIL = re.compile(r"\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,40}(?![A-Za-z0-9_\-])")
_DISCORD_HEAD = re.compile(r"[MNO][A-Za-z0-9_\-]{22,27}\Z")


def _discord_bot_token(scan: _Scan) -> bool:
    text = scan.ascii
    for tail in _DISCORD_TAIL.finditer(text):
        head = _DISCORD_HEAD.search(text, max(0, tail.start() - 28), tail.start())
        if head is None or head.start() and text[head.start() - 1] in _TOKEN_CHARS:
            continue
        token = text[head.start() : tail.end()]
        if not _is_filler(token) and _discord_valid(token):
            return True
    return False


_rule("discord_bot_token", "a Discord bot token", _discord_bot_token)
_token_rule(
    "telegram_bot_token",
    "a Telegram bot token",
    r"(?<![\d:])\d{8,10}:A[A-Za-z0-9_\-]{32,34}(?![A-Za-z0-9_\-])",
    needles=(":A",),
)

# --- credentials: payments, messaging, commerce -----------------------------------------------

_token_rule(
    "stripe_key",
    "a Stripe secret or restricted key",
    r"[sr]k_(?:live|test|prod)_[A-Za-z0-9]{20,247}",
    needles=("k_live_", "k_test_", "k_prod_"),
    boundary=True,
)
_token_rule("stripe_key", "a Stripe webhook secret", r"whsec_[A-Za-z0-9]{32,}", boundary=True)
_token_rule(
    "twilio_api_key",
    "a Twilio API key",
    r"SK[0-9a-f]{32}(?![0-9A-Za-z])",
    boundary=True,
)
_token_rule(
    "twilio_api_key",
    "a Twilio auth token",
    r"twilio[\w .\-]{0,30}?(?:auth[_ \-]?token|token|secret)[\"']?\s*(?:[:=]|=>|is)?\s*"
    r"[\"']?([0-9a-f]{32})\b",
    needles=("twilio",),
    lower=True,
    group=1,
)
_token_rule(
    "sendgrid_api_key",
    "a SendGrid API key",
    r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}(?![A-Za-z0-9_\-])",
    boundary=True,
)
_token_rule(
    "mailgun_api_key",
    "a Mailgun API key",
    r"key-[0-9a-f]{32}(?![0-9A-Za-z])",
    boundary=True,
)
_token_rule(
    "mailgun_api_key",
    "a Mailgun API key",
    r"mailgun[\w .\-\"':=]{0,40}?\b([0-9a-f]{32}-[0-9a-f]{8}-[0-9a-f]{8})\b",
    needles=("mailgun",),
    lower=True,
    group=1,
)
_token_rule(
    "shopify_token",
    "a Shopify access token",
    r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}",
    boundary=True,
)

# --- credentials: registries and vaults -------------------------------------------------------

_token_rule(
    "npm_token", "an npm access token", r"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])", boundary=True
)
_token_rule(
    "pypi_token",
    "a PyPI API token",
    r"pypi-(?:AgEIcHlwaS5vcmc|AgENdGVzdC5weXBpLm9yZw)[A-Za-z0-9_\-]{50,}",
    boundary=True,
)
_token_rule(
    "docker_hub_token",
    "a Docker Hub access token",
    r"dckr_(?:pat|oat)_[A-Za-z0-9_\-]{27,}",
    boundary=True,
)
_token_rule(
    "vault_token", "a HashiCorp Vault token", r"hv[sbr]\.[A-Za-z0-9_\-]{24,}", boundary=True
)

# --- credentials: LLM providers ---------------------------------------------------------------

_token_rule(
    "anthropic_api_key",
    "an Anthropic API key",
    r"sk-ant-[a-z]{2,6}\d{2}-[A-Za-z0-9_\-]{32,}",
    boundary=True,
)
_token_rule(
    "openrouter_api_key",
    "an OpenRouter API key",
    r"sk-or-v\d-[0-9a-f]{64}",
    boundary=True,
)
_token_rule(
    "openai_api_key",
    "an OpenAI-style API key (sk-...)",
    r"sk-(?:(?:proj|svcacct|admin|None)-[A-Za-z0-9_\-]{40,}"
    r"|[A-Za-z0-9_\-]{20,}T3BlbkFJ[A-Za-z0-9_\-]{20,}"
    r"|[A-Za-z0-9]{32,}(?![A-Za-z0-9_\-]))",
    boundary=True,
)
_token_rule(
    "huggingface_token",
    "a Hugging Face token",
    r"hf_[A-Za-z]{34,40}(?![A-Za-z0-9])",
    boundary=True,
)
_token_rule(
    "huggingface_token",
    "a Hugging Face organization token",
    r"api_org_[A-Za-z]{34,40}(?![A-Za-z0-9])",
    boundary=True,
)
_token_rule("groq_api_key", "a Groq API key", r"gsk_[A-Za-z0-9]{52}(?![A-Za-z0-9])", boundary=True)
_token_rule("xai_api_key", "an xAI API key", r"xai-[A-Za-z0-9]{70,}", boundary=True)
_token_rule("perplexity_api_key", "a Perplexity API key", r"pplx-[A-Za-z0-9]{40,}", boundary=True)
_token_rule(
    "replicate_api_token",
    "a Replicate API token",
    r"r8_[A-Za-z0-9]{37}(?![A-Za-z0-9])",
    boundary=True,
)
_token_rule(
    "cohere_api_key",
    "a Cohere API key",
    r"(?:cohere|co_api_key)[\w .\-]{0,20}?[\"']?\s*(?:[:=]|=>|is)\s*[\"']?([a-z0-9]{40})\b",
    needles=("cohere", "co_api_key"),
    lower=True,
    group=1,
    valid=_letters_and_digits,
)

# --- credentials: generic forms ---------------------------------------------------------------

_token_rule(
    "jwt",
    "a JSON Web Token",
    r"ey[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{2,}\.[A-Za-z0-9_\-]*",
    boundary=True,
    valid=_jwt_valid,
)

# A value that is syntax, not a secret.
_PLACEHOLDER_WORDS = frozenset(
    """str string bytes int integer bool boolean none null nil undefined true false optional
    required secretstr secretbytes any object redacted hidden masked placeholder example
    omitted removed unset empty""".split()
)
_TEMPLATE_RE = re.compile(
    r"^(?:<[^>]*>|\[[^\]]*\]|\{[^}]*\}|\$\{.*\}|\$\(.*\)|\$[A-Za-z_]\w*|%[A-Za-z_]\w*%"
    r"|%\(\w+\)s|\{\{.*\}\}|<%.*%>)$"
    r"|\$\{|\{\{|%s\b|%\(\w+\)|(?i:your[_\- ])"
)


def _is_placeholder(value: str) -> bool:
    v = value.strip()
    if not v:
        return True
    low = v.lower()
    if low in _PLACEHOLDER_WORDS or len(set(low)) <= 2:
        return True
    if "..." in v or "\u2026" in v or "xxxx" in low or "****" in v:
        return True
    return bool(_TEMPLATE_RE.search(v))


_CONN_RE = re.compile(
    r"://(?P<user>[^\s/:@'\"<>]{0,200}):(?P<pw>[^\s/@'\"<>]{1,200})@"
    r"(?P<host>[A-Za-z0-9\[\]_.\-]{1,255})"
)


def _connection_string(scan: _Scan) -> bool:
    text = scan.ascii
    i = text.find("://")
    while i != -1:
        match = _CONN_RE.match(text, i)
        if match and i and text[i - 1].isalnum():
            pw = match.group("pw")
            port_like = match.group("user") == "" and pw.isdigit()
            if not _is_placeholder(pw) and not port_like:
                return True
        i = text.find("://", i + 3)
    return False


_rule(
    "connection_string_credentials",
    "a connection string or URL with a password",
    _connection_string,
)
_token_rule(
    "authorization_header",
    "an HTTP authorization credential",
    r"authorization[\"']?\s*[:=]\s*[\"']?(?:bearer|basic|token|bot|apikey)\s+"
    r"([a-z0-9._~+/=\-]{16,})",
    needles=("authorization",),
    lower=True,
    group=1,
    valid=_letters_and_digits,
)
_token_rule(
    "authorization_header",
    "a bearer token",
    r"bearer\s+([a-z0-9._~+/\-]{20,}=*)",
    needles=("bearer",),
    lower=True,
    boundary=True,
    group=1,
    valid=_letters_and_digits,
)

# --- credentials: password / secret / token / key given a value -------------------------------

# The last word of a key that makes its value a credential ("db_password", "apiKey",
# "AWS_SECRET_ACCESS_KEY", "x-api-key", "PGPASSWORD"); "password_hash" or
# "SECRET_KEY_SETTING_NAME" end in another word and pass.
_SECRET_LAST = frozenset(
    "password passwd pwd passphrase passcode passwort pass secret secrets credential "
    "credentials apikey pat".split()
)
_SECRET_SUFFIXES = ("password", "passwd", "secret", "token", "apikey", "passphrase")
_NOT_SECRET_TOKEN = frozenset(
    "page next prev previous continuation cancel cancellation sync max min num end start stop "
    "bos eos pad unk sep cls mask special count counts".split()
)
_KEY_QUALIFIERS = frozenset(
    """api secret access private auth signing sign encryption encrypt crypt master client app
    application license licence service account session webhook shared storage admin jwt hmac
    consumer subscription root deploy server personal bot integration sas aes rsa ed25519
    openai anthropic stripe mailgun sendgrid twilio github gitlab slack discord telegram google
    gemini groq mistral cohere xai perplexity replicate huggingface hf together fireworks
    deepseek openrouter azure aws gcp firebase supabase algolia mapbox pinecone sentry datadog
    vercel netlify cloudflare heroku resend postmark brevo elevenlabs voyage jina tavily serpapi
    exa brave assemblyai deepgram pusher twitch spotify dropbox notion linear airtable shopify
    paypal square plaid coinbase binance kraken""".split()
)
_CAMEL_RE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_KEY_SPLIT_RE = re.compile(r"[_.\-]+")


def _is_secret_key(key: str) -> bool:
    words = [w for w in _KEY_SPLIT_RE.split(_CAMEL_RE.sub("_", key).lower()) if w]
    if not words:
        return False
    last = words[-1]
    prev = words[-2] if len(words) > 1 else ""
    if last == "token":
        return prev not in _NOT_SECRET_TOKEN
    if last == "key":
        return prev in _KEY_QUALIFIERS
    return last in _SECRET_LAST or last.endswith(_SECRET_SUFFIXES)


_STOPWORDS = frozenset(
    """the a an to your my is be must of for and or in on at with not please enter this that
    it you are will should can here least characters character required invalid incorrect
    wrong new old field""".split()
)
_SECRETISH_RE = re.compile(r"(?i)pass|pwd|secret|token|api_?key|credential")
_IDENT_RE = re.compile(r"^[A-Za-z_]+$")
_CODE_RE = re.compile(
    r"^(?:[A-Za-z_]+\d*(?:\.[A-Za-z_]+\d*)+|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*\(.*|os\.\w+.*"
    r"|process\.env.*|[a-z]+(?:_[a-z]+)+)$"
)
_PATHISH_RE = re.compile(
    r"^(?:~?/|\./|\.\./|[A-Za-z]:\\|https?://|file:)"
    r"|\.(?:pem|key|json|txt|env|p12|pfx|crt|cer|yaml|yml|toml|cfg|ini|gpg|asc|der)$"
)
_SYMBOL_RE = re.compile(r"[!@#$%^&*+=?~|\\/<>]")
_WORDS_RE = re.compile(r"[A-Za-z']+")


def _strong_secret(value: str) -> bool:
    """An unquoted value in code or prose that looks like a password, not a word or a name."""
    v = value.rstrip(".,;:!?=")
    if len(v) < 6 or _is_placeholder(v) or _PATHISH_RE.search(v) or _CODE_RE.match(v):
        return False
    if _IDENT_RE.match(v) and _SECRETISH_RE.search(v):
        return False  # an identifier that refers to the secret (password=new_password)
    has_digit = any(c.isdigit() for c in v)
    if has_digit and (v.isdigit() or any(c.isalpha() for c in v)):
        return True
    if _SYMBOL_RE.search(v[1:]):
        return True
    return any(c.islower() for c in v) and any(c.isupper() for c in v[1:])


def _weak_secret(value: str) -> bool:
    """A value in an env-style line (KEY=value): anything literal of four or more chars."""
    v = value.strip().rstrip(".,;")
    if len(v) < 4 or _is_placeholder(v) or _PATHISH_RE.search(v) or _CODE_RE.match(v):
        return False
    return not v.startswith(("$", "%"))


def _quoted_secret(value: str) -> bool:
    v = value.strip()
    if len(v) < 4 or _is_placeholder(v) or _PATHISH_RE.search(v):
        return False
    if any(c.isspace() for c in v) and any(w in _STOPWORDS for w in _WORDS_RE.findall(v.lower())):
        return False  # a sentence: a label, a hint, an error message
    return True


_UNQUOTED_RE = re.compile(r"[^\s\"'`,;&()\[\]{}<>]+")
_ANNOTATION_RE = re.compile(r"[A-Za-z_][\w.\[\], |]*?\s*=(?!=)\s*")
_KEY_CHARS = frozenset(string.ascii_letters + string.digits + "_.-")
_OPERATORS = ("=", ":")


def _value_at(text: str, pos: int) -> tuple[str, bool, int] | None:
    """The value starting at `pos`: (value, quoted, end), or None."""
    if pos >= len(text):
        return None
    first = text[pos]
    if first in "\"'`":
        end = text.find(first, pos + 1)
        if end == -1 or "\n" in text[pos + 1 : end]:
            return None
        return text[pos + 1 : end], True, end + 1
    match = _UNQUOTED_RE.match(text, pos)
    if not match:
        return None
    return match.group(0), False, match.end()


def _key_before(text: str, op: int) -> tuple[str, int] | None:
    """The key left of the operator at `op`: skip blanks and a closing quote, then a name."""
    i = op - 1
    while i >= 0 and text[i] in " \t":
        i -= 1
    if i >= 0 and text[i] in "\"'":
        i -= 1
    end = i + 1
    while i >= 0 and text[i] in _KEY_CHARS and end - i <= 80:
        i -= 1
    start = i + 1
    while start < end and not (text[start].isalpha() or text[start] == "_"):
        start += 1  # a name starts with a letter or _ (--password -> password)
    if start >= end:
        return None
    return text[start:end], start


def _assignment_at(text: str, op_pos: int) -> bool:
    """Whether the operator at `op_pos` gives a credential key a literal secret value."""
    op = text[op_pos]
    if op == "=":
        if op_pos and text[op_pos - 1] in "=!<>":
            return False
        if text.startswith("=", op_pos + 1):
            return False
        if op_pos and text[op_pos - 1] == ":":
            op_pos -= 1  # :=
    elif text.startswith(("::", ":/"), op_pos) or (op_pos and text[op_pos - 1] == ":"):
        return False
    found_key = _key_before(text, op_pos)
    if found_key is None or not _is_secret_key(found_key[0]):
        return False
    key, start = found_key
    pos = op_pos + (2 if text.startswith((":=", "=>"), op_pos) else 1)
    while pos < len(text) and text[pos] in " \t":
        pos += 1
    found = _value_at(text, pos)
    if found is None:
        return False
    value, quoted, end = found
    if op == ":" and not quoted:
        annotation = _ANNOTATION_RE.match(text, pos)  # password: str = "..."
        if annotation:
            found = _value_at(text, annotation.end())
            if found is None:
                return False
            value, quoted, end = found
    if quoted:
        return _quoted_secret(value)
    if end < len(text) and text[end] in "([":
        return False  # a call or a subscript: get_password(), os.environ["PW"]
    env_style = key.upper() == key or text[max(0, start - 7) : start] == "export "
    return _weak_secret(value) if env_style else _strong_secret(value)


_ASSIGN_NEEDLES = ("pass", "pwd", "secret", "token", "key", "credential", "pat")


def _assignment(scan: _Scan) -> bool:
    if not any(n in scan.low for n in _ASSIGN_NEEDLES):
        return False
    text = scan.text
    for op in _OPERATORS:
        i = text.find(op)
        while i != -1:
            if _assignment_at(text, i):
                return True
            i = text.find(op, i + 1)
    return False


_PROSE_SECRET_RE = re.compile(  # on lower-case text
    r"(?P<what>password|passcode|passphrase|pin(?:\s+code|\s+number)?|api\s+key"
    r"|secret\s+key|access\s+token|auth\s+token|token|secret)"
    r"(?:\s+(?:for|of|to|on)(?:\s+[\w.\-]+){1,4}?)?"
    r"\s+(?:is|was|is\s+now|is\s+still|has\s+been\s+changed\s+to|changed\s+to|became|will\s+be)"
    r"\s+"
)
_PROSE_ANCHORS = _word_set("password passcode passphrase pin key token secret")
_PIN_RE = re.compile(r"\d{4,8}")


def _prose_secret(scan: _Scan) -> bool:
    hits = _PROSE_ANCHORS & scan.words
    if not hits:
        return False
    low, text = scan.low, scan.text
    for start, end in scan.windows(hits, 20, 120):
        pos = start
        while (match := _PROSE_SECRET_RE.search(low, pos, end)) is not None:
            pos = match.start() + 1
            if match.start() and low[match.start() - 1].isalnum():
                continue
            found = _value_at(text, match.end())
            if found is None:
                continue
            value, quoted, _ = found
            if match.group("what").startswith("pin"):
                if _PIN_RE.fullmatch(value.rstrip(".,;!")):
                    return True
            elif _quoted_secret(value) if quoted else _strong_secret(value):
                return True
    return False


_rule("password_assignment", "a password, secret, token or API key value", _assignment)
_token_rule(
    "password_assignment",
    "a password on a command line",
    r"mysql(?:dump|admin|import|show|check)?\s[^\n]*?\s-p([^\s\"'`]{4,})",
    needles=("mysql",),
    boundary=True,
    group=1,
    valid=lambda v: _strong_secret(v) or _weak_secret(v) and not _IDENT_RE.match(v),
)
_rule("password_assignment", "a password, secret, token or API key value", _prose_secret)

# --- personal data: payment cards --------------------------------------------------------------

_CARD_RE = re.compile(r"\d(?:[ \-]?\d){11,18}")
_CARD_SPLIT_RE = re.compile(r"[ \-]")


def _plausible_issuer(d: str) -> bool:
    """The issuer prefix (IIN) and length of a real card brand."""
    n = len(d)
    p2, p3, p4, p6 = int(d[:2]), int(d[:3]), int(d[:4]), int(d[:6])
    if d[0] == "4":
        return n in (13, 16, 19)  # Visa
    if 51 <= p2 <= 55 or 2221 <= p4 <= 2720:
        return n == 16  # Mastercard
    if p2 in (34, 37):
        return n == 15  # American Express
    if p4 == 6011 or 644 <= p3 <= 649 or p2 == 65 or 622126 <= p6 <= 622925:
        return 16 <= n <= 19  # Discover
    if p2 == 62 or 2200 <= p4 <= 2204 or 3528 <= p4 <= 3589:
        return 16 <= n <= 19  # UnionPay, Mir, JCB
    if 300 <= p3 <= 305 or p2 in (36, 38, 39) or p4 == 3095:
        return 14 <= n <= 19  # Diners Club
    if p2 in (50, 56, 57, 58, 63, 67):
        return 13 <= n <= 19  # Maestro
    return False


def _payment_card(scan: _Scan) -> bool:
    if scan.digits < 13:
        return False
    text = scan.ascii
    for start in scan.starts(b"0000"):  # every card number starts with four digits
        if start and (text[start - 1] in _WORDCHAR or text[start - 1] in ".-/"):
            continue  # inside a word, a decimal, a range, a path
        match = _CARD_RE.match(text, start)
        if match is None:
            continue
        end = match.end()
        if end < len(text) and (
            text[end] in _WORDCHAR
            or text[end] in "-/"
            or text.startswith(".", end)
            and text[end + 1 : end + 2].isdigit()
        ):
            continue
        groups = _CARD_SPLIT_RE.split(match.group(0))
        for i in range(len(groups)):
            for j in range(len(groups), i, -1):
                part = groups[i:j]
                digits = "".join(part)
                if not 13 <= len(digits) <= 19:
                    continue
                if len(part) > 1 and not all(3 <= len(g) <= 6 for g in part):
                    continue
                if _plausible_issuer(digits) and luhn.is_valid(digits):
                    return True
    return False


_rule("payment_card", "a payment card number", _payment_card)

# --- personal data: IBAN ----------------------------------------------------------------------

_IBAN_RE = re.compile(r"[A-Z]{2}\d{2}(?: ?[A-Z0-9]{1,4}){3,8}")


def _iban_lengths() -> dict[str, int]:
    """Country code -> IBAN length, from stdnum's copy of the SWIFT IBAN registry."""
    lengths = {}
    for _, country, _, props, _ in numdb.get("iban").prefixes:
        bban = props.get("bban", "")
        lengths[country] = 4 + sum(int(n) for n in re.findall(r"\d+", bban))
    return lengths


_IBAN_LENGTHS = _iban_lengths()


def _mod97(value: str) -> bool:
    """The IBAN checksum alone: a cheap test before stdnum's full validation."""
    rearranged = value[4:] + value[:4]
    if not rearranged.isalnum() or not rearranged.isascii():
        return False
    return int("".join(str(int(c, 36)) for c in rearranged)) % 97 == 1


def _iban(scan: _Scan) -> bool:
    if scan.digits < 8:
        return False
    text = scan.ascii
    for start in scan.starts(b"AA00"):
        length = _IBAN_LENGTHS.get(text[start : start + 2])
        if length is None or start and text[start - 1] in _WORDCHAR:
            continue
        match = _IBAN_RE.match(text, start)
        if match is None:
            continue
        # Group by group until the country's length: the match may have taken in the start
        # of the next word ("... 0130 00 The"), which must be left out.
        value, end = "", start
        for part in match.group(0).split(" "):
            value += part
            end += len(part) + (end > start)
            if len(value) >= length:
                break
        if len(value) != length or end < len(text) and text[end] in _WORDCHAR:
            continue
        if _mod97(value) and std_iban.is_valid(value):
            return True
    return False


_rule("iban", "an IBAN (bank account number)", _iban)

# --- personal data: US SSN and national ids ---------------------------------------------------


def _ssn_formatted(scan: _Scan) -> bool:
    if scan.digits < 9:
        return False
    text, shape = scan.ascii, scan.shape
    i = shape.find(b"000-00-0000")
    while i != -1:
        left = i == 0 or shape[i - 1] not in b"0Aa_-"
        right = i + 11 == len(shape) or shape[i + 11] not in b"0Aa_-"
        if left and right and us_ssn.is_valid(text[i : i + 11]):
            return True
        i = shape.find(b"000-00-0000", i + 1)
    return False


_rule("us_ssn", "a US Social Security number", _ssn_formatted)


@dataclass(frozen=True)
class _IdKind:
    rule: str
    reason: str
    words: frozenset[bytes]  # one of these words must be in the text
    context: re.Pattern[str]  # where it is mentioned
    candidate: re.Pattern[str]  # what the number looks like
    valid: Callable[[str], bool]  # its checksum (stdnum)


_NINO_BAD_PREFIX = frozenset("BG GB NK KN TN NT ZZ".split())
_SEPARATORS_RE = re.compile(r"[\s.\-/]")


def _nino_valid(value: str) -> bool:
    v = _SEPARATORS_RE.sub("", value).upper()
    return v[:2] not in _NINO_BAD_PREFIX and v[1] != "O"


def _compact(validator: Callable[[str], bool]) -> Callable[[str], bool]:
    return lambda value: validator(_SEPARATORS_RE.sub("", value))


def _id(
    rule: str, reason: str, words: str, context: str, candidate: str, valid: Callable[[str], bool]
) -> _IdKind:
    return _IdKind(
        rule, reason, _word_set(words), re.compile(context), re.compile(candidate), valid
    )


_NUM_L = r"(?<![\w\-])"  # a number's left edge
_NUM_R = r"(?![\w\-])"  # and its right edge
_ID_KINDS: tuple[_IdKind, ...] = (
    _id(
        "us_ssn",
        "a US Social Security number",
        "ssn ss social",
        r"(?i)\bSSN\b|social\s+security\s+(?:number|no\b|#)|\bSS#",
        rf"{_NUM_L}\d{{3}}[ \-]?\d{{2}}[ \-]?\d{{4}}{_NUM_R}",
        _compact(us_ssn.is_valid),
    ),
    _id(
        "national_id",
        "a UK National Insurance number",
        "insurance ni nino",
        r"(?i)national\s+insurance|\bNI\s*(?:no\b|number|#)|\bNINO\b",
        r"(?i)\b[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?\d{2} ?\d{2} ?\d{2} ?[A-D]\b",
        _nino_valid,
    ),
    _id(
        "national_id",
        "a UK NHS number",
        "nhs",
        r"\bNHS\b",
        rf"{_NUM_L}\d{{3}}[ \-]?\d{{3}}[ \-]?\d{{4}}{_NUM_R}",
        _compact(gb_nhs.is_valid),
    ),
    _id(
        "national_id",
        "a Dutch citizen service number (BSN)",
        "bsn burgerservicenummer sofinummer citizen",
        r"(?i)\bBSN\b|burgerservicenummer|sofinummer|citizen\s+service\s+number",
        rf"{_NUM_L}(?:\d{{4}}\.?\d{{2}}\.?\d{{3}}|\d{{9}}){_NUM_R}",
        _compact(nl_bsn.is_valid),
    ),
    _id(
        "national_id",
        "a German tax id (Steuer-ID)",
        "steuer steuerid steueridentifikationsnummer identifikationsnummer idnr tax",
        r"(?i)steuer-?\s?id|steueridentifikationsnummer|identifikationsnummer|\bIdNr\b"
        r"|tax\s+id(?:entification)?",
        rf"{_NUM_L}\d{{2}} ?\d{{3}} ?\d{{3}} ?\d{{3}}{_NUM_R}",
        _compact(de_idnr.is_valid),
    ),
    _id(
        "national_id",
        "a French social security number (NIR)",
        "nir sécurité securite sécu secu insee vitale social",
        r"(?i)\bNIR\b|s[ée]curit[ée]\s+sociale|num[ée]ro\s+de\s+s[ée]cu|\bINSEE\b"
        r"|carte\s+vitale|social\s+security",
        rf"(?i){_NUM_L}[12] ?\d{{2}} ?\d{{2}} ?(?:\d{{2}}|2[AB]) ?\d{{3}} ?\d{{3}} ?\d{{2}}"
        rf"{_NUM_R}",
        fr_nir.is_valid,
    ),
    _id(
        "national_id",
        "a Spanish DNI/NIE",
        "dni nie nif documento",
        r"\bDNI\b|\bNIE\b|\bNIF\b|(?i:documento\s+nacional)",
        rf"(?i){_NUM_L}(?:\d{{8}}|[XYZ]-?\d{{7}})-?[A-Z]{_NUM_R}",
        lambda v: es_dni.is_valid(v) or es_nie.is_valid(v),
    ),
    _id(
        "national_id",
        "an Italian fiscal code (codice fiscale)",
        "codice cf fiscal tax",
        r"(?i)codice\s+fiscale|\bCF\b|fiscal\s+code|tax\s+code",
        r"(?i)\b[A-Z]{6}\d{2}[A-Z]\d{2}[A-Z]\d{3}[A-Z]\b",
        lambda v: it_cf.is_valid(v.upper()),
    ),
    _id(
        "national_id",
        "an Indian Aadhaar number",
        "aadhaar aadhar uidai",
        r"(?i)aadhaa?r|\bUIDAI\b",
        rf"{_NUM_L}[2-9]\d{{3}}[ \-]?\d{{4}}[ \-]?\d{{4}}{_NUM_R}",
        _compact(in_aadhaar.is_valid),
    ),
    _id(
        "national_id",
        "a Canadian Social Insurance Number",
        "sin social",
        r"\bSIN\b|(?i:social\s+insurance)",
        rf"{_NUM_L}\d{{3}}[ \-]?\d{{3}}[ \-]?\d{{3}}{_NUM_R}",
        _compact(ca_sin.is_valid),
    ),
    _id(
        "national_id",
        "a Brazilian CPF",
        "cpf",
        r"\bCPF\b",
        rf"{_NUM_L}\d{{3}}\.?\d{{3}}\.?\d{{3}}-?\d{{2}}{_NUM_R}",
        _compact(br_cpf.is_valid),
    ),
    _id(
        "national_id",
        "a Polish PESEL",
        "pesel",
        r"(?i)\bPESEL\b",
        rf"{_NUM_L}\d{{11}}{_NUM_R}",
        pl_pesel.is_valid,
    ),
    _id(
        "national_id",
        "a Swedish personal identity number",
        "personnummer personal",
        r"(?i)personnummer|personal\s+identity\s+number",
        rf"{_NUM_L}(?:\d{{2}})?\d{{6}}[\-+]?\d{{4}}{_NUM_R}",
        se_pnr.is_valid,
    ),
)
_ID_WINDOW = 60


def _id_detector(kind: _IdKind) -> Detector:
    def detect(scan: _Scan) -> bool:
        if scan.digits < 6 or not kind.words & scan.words:
            return False
        text = scan.text
        for ctx in kind.context.finditer(text):
            start = max(0, ctx.start() - _ID_WINDOW)
            for cand in kind.candidate.finditer(text, start, ctx.end() + _ID_WINDOW):
                if kind.valid(cand.group(0)):
                    return True
        return False

    return detect


for _kind in _ID_KINDS:
    _rule(_kind.rule, _kind.reason, _id_detector(_kind))

# --- personal data: health and financial facts about a person --------------------------------
#
# A fact is a subject that is a person, a few auxiliary words, and an anchor: a diagnosis,
# condition, medication ... Each pattern runs only in windows around its anchor words.

_REL = (
    r"wife|husband|partner|spouse|son|daughter|kids?|child|children|mother|mom|mum|father|dad"
    r"|parents?|brother|sister|siblings?|friend|boyfriend|girlfriend|boss|manager|colleague"
    r"|coworker|co-worker|cousin|aunt|uncle|grandmother|grandma|grandfather|grandpa"
    r"|grandparents?|fianc[ée]e?|roommate|flatmate|neighbou?r|baby|family|client|niece|nephew"
)
_NOT_NAMES = (
    "The|This|That|These|Those|It|Its|There|Here|What|Which|Who|When|Where|Why|How|A|An|Each"
    "|Every|Some|Any|No|All|Our|Your|My|His|Her|Their|If|And|But|Or|So|Then|Also|Note|Please"
    "|Data|Dataset|Datasets|Users|Customers|Service|System|Model|App|Table|Field|Column"
    "|Record|Records|Test|Tests|Code|Function|Module|Class|Schema|Project|Team|Company|We"
    "|They|You|He|She|Research|Studies|Study|Patients|Everyone|Nobody|Somebody|Someone"
)
_NAME = rf"(?=[A-Z])(?!(?:{_NOT_NAMES})\b)[A-Z][a-z]{{1,20}}"
_POSS_WORDS = r"my|his|her|their|your|the\s+user's|user's"
_SUBJ_H = (
    rf"\b(?:(?i:i|we|he|she|they|you|(?:the\s+)?user|(?:the\s+)?patient)\b"
    rf"|(?i:{_POSS_WORDS}|our)\s+(?i:{_REL})\b|{_NAME}\b)"
)
_SUBJ_F = rf"\b(?:(?i:i|he|she|(?:the\s+)?user)\b|(?i:{_POSS_WORDS})\s+(?i:{_REL})\b)"
_POSS_H = rf"\b(?:(?i:{_POSS_WORDS}|our)(?:\s+(?i:{_REL})'s)?|{_NAME}'s)"
_POSS_F = rf"\b(?:(?i:{_POSS_WORDS})(?:\s+(?i:{_REL})'s)?|{_NAME}'s)"
_GAP_WORDS = (
    r"also|recently|just|currently|still|now|already|finally|actually|apparently"
    r"|unfortunately|sadly|officially|both|was|were|has|have|had|been|being|got|gotten|is|am"
    r"|are|be|became|become|becomes|will|would|may|might|could|can|started|starting|began"
    r"|newly|get|gets|getting|do|does|did|not|don't|doesn't|didn't|never|no|longer|really"
    r"|regularly|daily|usually|sometimes|since|first|reportedly|who|who's|once|later"
)
_GAP = rf"(?:'(?:m|s|re|ve|d)\b)?(?:\s+(?i:{_GAP_WORDS})\b){{0,4}}\s+"
_END = r"\b(?!-)"  # an anchor that is a whole word, not the start of "covid-safe"

_CONDITIONS = (
    r"diabetes|cancer|leukemia|leukaemia|lymphoma|melanoma|a\s+tumou?r|a\s+brain\s+tumou?r"
    r"|hiv|aids|hepatitis(?:\s+[abc])?|herpes|chlamydia|gonorrh?oea|syphilis|an?\s+st[di]"
    r"|depression|anxiety(?:\s+disorder)?|panic\s+(?:disorder|attacks)|bipolar(?:\s+disorder)?"
    r"|schizophrenia|ptsd|c-ptsd|ocd|adhd|autism|asperger'?s|epilepsy|asthma|copd|dementia"
    r"|alzheimer'?s|parkinson'?s|multiple\s+sclerosis|als|crohn'?s(?:\s+disease)?|colitis"
    r"|c[oe]eliac(?:\s+disease)?|ibs|lupus|fibromyalgia|endometriosis|pcos|infertility"
    r"|an\s+eating\s+disorder|anorexia|bulimia|insomnia|sleep\s+apnea|hypertension"
    r"|high\s+blood\s+pressure|heart\s+disease|a\s+heart\s+condition|heart\s+failure"
    r"|arthritis|tuberculosis|covid(?:-19)?|long\s+covid|migraines|a\s+disability"
    r"|an?\s+(?:drug|alcohol|gambling|opioid)?\s*addiction|alcoholism|a\s+drinking\s+problem"
    r"|a\s+drug\s+problem|obesity|hypothyroidism|hyperthyroidism|kidney\s+disease"
    r"|liver\s+disease|cirrhosis|cystic\s+fibrosis|sickle\s+cell(?:\s+disease)?|hemophilia"
    r"|a\s+mental\s+illness|mental\s+illness|a\s+chronic\s+illness|a\s+terminal\s+illness"
    r"|borderline\s+personality\s+disorder|bpd|psoriasis|glaucoma"
)
_NOUN_USE = (  # "diabetes data", "HIV testing": the condition as a topic, not a fact
    r"data|dataset|datasets|records?|research|patients|screening|module|table|field|column"
    r"|codes?|labels?|app|apps|api|service|model|classifier|prediction|risk|awareness|study"
    r"|studies|trial|trials|clinic|clinics|drugs?|foundation|charity|prevention|detection"
    r"|cases|statistics|stats|rates?|category|categories|tests?|testing|features?"
)
_MODS = (
    r"a|an|the|type\s+[12]|chronic|severe|mild|early|late|advanced|clinical|stage\s+(?:[1-4]"
    r"|i{1,3}|iv)|terminal|untreated|some|bad|major|generalized|social|postpartum|metastatic"
    r"|breast|lung|prostate|colon|skin|pancreatic|ovarian|brain|blood|early-onset"
)
_HEALTH_ADJ = (
    r"diabetic|epileptic|asthmatic|bipolar|schizophrenic|autistic|anorexic|bulimic"
    r"|hiv[- ]?(?:positive|negative)|pregnant|infertile|suicidal|an\s+alcoholic|alcoholic"
    r"|an\s+addict|in\s+remission|in\s+rehab|on\s+dialysis|on\s+chemo(?:therapy)?"
    r"|in\s+chemo(?:therapy)?|in\s+therapy|in\s+counsell?ing|in\s+treatment\s+for"
    r"|immunocompromised|terminally\s+ill|clinically\s+depressed|allergic\s+to"
    r"|expecting\s+a\s+baby|having\s+a\s+baby|trying\s+to\s+conceive|going\s+through\s+ivf"
    r"|on\s+the\s+autism\s+spectrum|neurodivergent|hospitali[sz]ed|sectioned"
)
_MEDS = (
    r"sertraline|zoloft|prozac|fluoxetine|lexapro|escitalopram|citalopram|paroxetine|paxil"
    r"|venlafaxine|effexor|duloxetine|cymbalta|bupropion|wellbutrin|mirtazapine|trazodone"
    r"|lithium|adderall|ritalin|methylphenidate|vyvanse|concerta|xanax|alprazolam|valium"
    r"|diazepam|klonopin|clonazepam|lorazepam|ativan|insulin|metformin|ozempic|semaglutide"
    r"|wegovy|mounjaro|tirzepatide|prep|truvada|descovy|antiretrovirals|arvs"
    r"|antidepressants|antipsychotics|ssris?|seroquel|quetiapine|abilify|aripiprazole"
    r"|risperidone|olanzapine|lamotrigine|lamictal|gabapentin|pregabalin|oxycodone|methadone"
    r"|suboxone|buprenorphine|naltrexone|levothyroxine|synthroid|chemo(?:therapy)?|hrt"
    r"|testosterone|estrogen|oestrogen|birth\s+control|the\s+pill|statins|atorvastatin"
    r"|lisinopril|warfarin|blood\s+thinners|opioids|prednisone|anti-?anxiety\s+meds"
    r"|medication\s+for|meds\s+for|pills\s+for|immunotherapy|radiation\s+therapy|dialysis"
)
_PROVIDERS = (
    r"therapist|psychiatrist|psychologist|oncologist|counsell?or|endocrinologist"
    r"|cardiologist|neurologist|rheumatologist|psychotherapist|fertility\s+(?:doctor|clinic)"
    r"|addiction\s+specialist|hiv\s+specialist|gynecologist|gynaecologist|urologist"
)
_PROCEDURES = (
    r"surgery|a\s+mastectomy|an\s+abortion|a\s+miscarriage|a\s+heart\s+attack"
    r"|a\s+stroke|a\s+seizure|seizures|panic\s+attacks?|a\s+panic\s+attack"
    r"|a\s+nervous\s+breakdown|a\s+vasectomy|ivf|a\s+transplant|chemo(?:therapy)?|a\s+biopsy"
    r"|a\s+colonoscopy|a\s+hysterectomy|an\s+overdose|a\s+psychotic\s+episode"
    r"|a\s+manic\s+episode|rehab"
)
_HEALTH_RECORDS = (
    r"(?:hiv|std|sti|covid(?:-19)?|cancer|mental\s+health|medical|psychiatric|pregnancy"
    r"|genetic|brca|vaccination|vaccine|drug\s+test|blood\s+test|biopsy|mri|lab|health)"
    r"\s+(?:status|results?|diagnosis|history|records?|prognosis|report)"
    r"|diagnosis|prognosis|medical\s+(?:history|records?|condition|issues?|leave)"
    r"|medications?|meds|prescriptions?|therapist|psychiatrist|psychologist|oncologist"
    r"|chemo(?:therapy)?|treatment\s+plan|blood\s+(?:sugar|pressure|glucose)|a1c"
    r"|cd4(?:\s+count)?|viral\s+load|insulin|disability|illness|surgery|pregnancy|miscarriage"
    r"|abortion|due\s+date|bmi|psychiatric\s+(?:condition|history)"
)
# Each fact rule has two parts. The predicate ("has type 2 diabetes", "takes sertraline",
# "salary is $120k") is searched in the lower-case text, in windows around its anchor words;
# then a person must stand right before it in the original text (names need their capital):
# a subject ("I", "she's been", "my wife", "Bob") or a possessive ("my", "Alice's").
# A condition used as a noun ("diabetes data") is not a fact.

_HAVE = (
    r"have|has|had|'ve|having|suffers?\s+from|suffering\s+from|suffered\s+from"
    r"|struggles?\s+with|struggling\s+with|struggled\s+with|lives?\s+with|living\s+with"
    r"|battling|fighting|recovering\s+from|recovered\s+from|treated\s+for"
    r"|being\s+treated\s+for|got"
)
_TAKE = (
    r"take|takes|took|taking|on|prescribed|started|starting|stopped|quit|inject|injects"
    r"|injecting|needs|need"
)
_DOSE = r"a|an|the|daily|my|his|her|some|low-dose|high-dose|\d+\s?mg(?:\s+of)?"
_SEE = r"see|sees|seeing|saw|visit|visits|visiting|visited|have|has|started\s+seeing"
_UNDERGO = (
    r"had|have|has|having|underwent|undergoing|getting|get|got|scheduled|booked"
    r"|recovering\s+from"
)

_AMOUNT = (  # on lower-case text
    r"(?:(?:[$€£¥₹]|(?:usd|eur|gbp|chf|cad|aud|inr|us\$)\s?)\s?\d[\d,.]*(?:\s?(?:[km]\b|mm\b"
    r"|bn\b|million|thousand|grand))?"
    r"|\d[\d,.]*(?:\s?(?:[km]\b|million|thousand|grand))?\s?(?:dollars|euros?|pounds|usd"
    r"|eur|gbp|chf|rupees|bucks|€|\$)"
    r"|\d[\d,.]*\s?k\b)"
)
_APPROX = (
    r"(?:about|around|roughly|approximately|approx\.?|only|just|over|under|nearly|almost|~"
    r"|more\s+than|less\s+than|close\s+to|like)"
)
_FIN_NOUNS = (
    r"salary|income|pay|paycheck|paycheque|wages?|compensation|comp|bonus|net\s+worth|rent"
    r"|mortgage(?:\s+payment)?|debts?|savings|bank\s+balance|account\s+balance"
    r"|checking\s+account|savings\s+account|401\(?k\)?|pension|retirement\s+savings"
    r"|tax\s+refund|tax\s+bill|alimony|child\s+support|student\s+loans?|loans?|car\s+payment"
    r"|credit\s+card\s+(?:debt|balance|bill)|hourly\s+rate|day\s+rate|raise|inheritance"
    r"|portfolio|investments|overdraft|medical\s+bills|back\s+taxes"
)
_FIN_MODS = (
    r"annual|monthly|yearly|weekly|gross|net|base|total|current|new|old|starting|take-home"
    r"|take\s+home|household|outstanding|remaining|combined|personal"
)
_FIN_VERBS = (
    r"is|was|are|were|of|:|=|comes\s+to|came\s+to|totals?|totaled|totalled|hit|reached"
    r"|dropped\s+to|went\s+up\s+to|rose\s+to|is\s+now|will\s+be|sits\s+at|stands\s+at"
    r"|increased\s+to|decreased\s+to|is\s+currently|'s|just\s+hit|is\s+still"
)

_SUBJECT_H = re.compile(rf"{_SUBJ_H}(?:{_GAP})?\Z")
_OWNER_H = re.compile(rf"{_POSS_H}\s+\Z")
_SUBJECT_F = re.compile(rf"{_SUBJ_F}(?:{_GAP})?\Z")
_OWNER_F = re.compile(rf"{_POSS_F}\s+\Z")
_NOUN_AFTER = re.compile(rf"\s+(?:{_NOUN_USE})\b")  # case-sensitive: "Patients" starts anew
_SUBJECT_REACH = 110  # how far before a predicate its subject may start


@dataclass(frozen=True)
class _Fact:
    anchors: frozenset[bytes]  # words of which one is in every match of the predicate
    predicate: re.Pattern[str]  # searched in the lower-case text
    person: re.Pattern[str]  # must end right where the predicate starts (original text)
    needs_amount: bool = False  # only looked for when the text has a sum of money


def _fact(anchors: str, predicate: str, person: re.Pattern[str], amount: bool = False) -> _Fact:
    return _Fact(_word_set(anchors), re.compile(predicate), person, amount)


_HEALTH_FACTS = (
    _fact("diagnosed tested", r"(?:diagnosed|tested\s+positive)\s+(?:with|for|as)\b", _SUBJECT_H),
    _fact(
        """diabetes cancer leukemia leukaemia lymphoma melanoma tumor tumour hiv aids hepatitis
        herpes chlamydia gonorrhea gonorrhoea syphilis std sti depression anxiety panic bipolar
        schizophrenia ptsd ocd adhd autism asperger aspergers epilepsy asthma copd dementia
        alzheimer alzheimers parkinson parkinsons sclerosis als crohn crohns colitis celiac
        coeliac ibs lupus fibromyalgia endometriosis pcos infertility disorder anorexia
        bulimia insomnia apnea hypertension blood heart arthritis tuberculosis covid migraines
        disability addiction alcoholism drinking drug obesity hypothyroidism hyperthyroidism
        kidney liver cirrhosis fibrosis sickle hemophilia illness bpd psoriasis glaucoma""",
        rf"(?:{_HAVE})(?:\s+(?:{_MODS}))*\s+(?:{_CONDITIONS}){_END}",
        _SUBJECT_H,
    ),
    _fact(
        """diabetic epileptic asthmatic bipolar schizophrenic autistic anorexic bulimic hiv
        pregnant infertile suicidal alcoholic addict remission rehab dialysis chemo
        chemotherapy therapy counseling counselling treatment immunocompromised terminally
        depressed allergic baby conceive ivf autism neurodivergent hospitalized hospitalised
        sectioned""",
        rf"(?:type\s+[12]\s+)?(?:{_HEALTH_ADJ}){_END}"
        rf"(?!\s+with\s+(?:ideas|possibilities|meaning|potential)\b)",
        _SUBJECT_H,
    ),
    _fact(
        """sertraline zoloft prozac fluoxetine lexapro escitalopram citalopram paroxetine paxil
        venlafaxine effexor duloxetine cymbalta bupropion wellbutrin mirtazapine trazodone
        lithium adderall ritalin methylphenidate vyvanse concerta xanax alprazolam valium
        diazepam klonopin clonazepam lorazepam ativan insulin metformin ozempic semaglutide
        wegovy mounjaro tirzepatide prep truvada descovy antiretrovirals arvs antidepressants
        antipsychotics ssri ssris seroquel quetiapine abilify aripiprazole risperidone
        olanzapine lamotrigine lamictal gabapentin pregabalin oxycodone methadone suboxone
        buprenorphine naltrexone levothyroxine synthroid chemo chemotherapy hrt testosterone
        estrogen oestrogen birth pill statins atorvastatin lisinopril warfarin thinners opioids
        prednisone anxiety meds medication pills immunotherapy radiation dialysis""",
        rf"(?:{_TAKE})(?:\s+(?:{_DOSE}))*\s+(?:{_MEDS}){_END}"
        rf"(?!\s+(?:ion|batter(?:y|ies)|cells?|mining|prices?|stocks?)\b)",
        _SUBJECT_H,
    ),
    _fact(
        """therapist psychiatrist psychologist oncologist counselor counsellor endocrinologist
        cardiologist neurologist rheumatologist psychotherapist fertility addiction hiv
        gynecologist gynaecologist urologist""",
        rf"(?:{_SEE})\s+(?:a|an|my|his|her|their)\s+(?:{_PROVIDERS}){_END}",
        _SUBJECT_H,
    ),
    _fact(
        """surgery mastectomy abortion miscarriage heart stroke seizure seizures panic breakdown
        vasectomy ivf transplant biopsy colonoscopy hysterectomy overdose psychotic manic
        rehab chemo chemotherapy""",
        rf"(?:{_UNDERGO})(?:\s+(?:a|an|my|his|her|their))?\s+(?:{_PROCEDURES}){_END}"
        rf"(?!\s+of\s+(?:luck|genius|insight)\b)",
        _SUBJECT_H,
    ),
    _fact(
        """hiv std sti covid cancer mental medical psychiatric pregnancy genetic brca
        vaccination vaccine drug blood biopsy mri lab health diagnosis prognosis medications
        medication meds prescription prescriptions therapist psychiatrist psychologist
        oncologist chemo chemotherapy treatment a1c cd4 viral insulin disability illness
        surgery miscarriage abortion due bmi""",
        rf"(?:{_HEALTH_RECORDS}){_END}",
        _OWNER_H,
    ),
)

_FINANCIAL_FACTS = (
    _fact(  # "my salary is $120k", "User's monthly rent is $2,400"
        """salary income pay paycheck paycheque wage wages compensation comp bonus worth rent
        mortgage debt debts savings balance checking 401 401k pension retirement refund tax
        alimony support loan loans payment rate raise inheritance portfolio investments
        overdraft bills taxes""",
        rf"(?:(?:{_FIN_MODS})\s+)*(?:{_FIN_NOUNS})\b\s*(?:(?:{_FIN_VERBS})\s*)?"
        rf"(?:{_APPROX}\s*)?{_AMOUNT}",
        _OWNER_F,
        amount=True,
    ),
    _fact(  # "my credit score is 580", "her bankruptcy"
        "credit fico bankruptcy foreclosure eviction collector",
        rf"(?:credit\s+score|fico(?:\s+score)?|credit\s+rating)\b(?:\s*(?:{_FIN_VERBS}))?\s*"
        rf"(?:{_APPROX}\s*)?[3-8]\d\d\b"
        rf"|(?:bankruptcy|foreclosure|eviction|debt\s+collector|credit\s+history)\b",
        _OWNER_F,
    ),
    _fact(  # "I have $40,000 in credit card debt", "I owe the IRS $5k", "she earns £65k"
        """debt loans loan red overdrawn owed behind saved savings bank checking 401 401k
        retirement stocks crypto investments owe owes earn earns earned earning make makes
        made making home paid bring brings brought""",
        rf"(?:(?:have|has|had|owe|owes|owed|carry|carries|carrying|got|racked\s+up|am|is|'m"
        rf"|'s)\s+)?(?:{_APPROX}\s+)?{_AMOUNT}(?:\s+[\w']+){{0,4}}?\s+(?:in\s+debt|of\s+debt"
        rf"|debt|in\s+(?:\w+\s+){{0,2}}(?:debt|loans?)|loans?|in\s+the\s+red|overdrawn|owed"
        rf"|behind|saved|in\s+(?:\w+\s+){{0,2}}(?:savings|the\s+bank|checking|401\(?k\)?"
        rf"|retirement|stocks|crypto|investments))\b"
        rf"|(?:owe|owes|owed)\s+(?:[\w']+\s+){{0,3}}?(?:{_APPROX}\s+)?{_AMOUNT}"
        rf"|(?:earn|earns|earned|earning|make|makes|made|making|take\s+home|takes\s+home"
        rf"|(?:get|gets|got|am|is|was|are|were|'m|'s|being)\s+paid|bring\s+in|brings\s+in"
        rf"|brought\s+in)\s+(?:{_APPROX}\s+)?{_AMOUNT}",
        _SUBJECT_F,
        amount=True,
    ),
    _fact(  # "I declared bankruptcy", "he was evicted", "I'm behind on my mortgage"
        """bankruptcy bankrupt insolvent evicted foreclosed foreclosure collections behind
        defaulted debt welfare stamps paycheck broke""",
        r"(?:(?:declared|filed|filing|file|went|going|go|gone|became|become)\s+)?(?:for\s+)?"
        r"(?:chapter\s+(?:7|11|13)\s+)?(?:bankruptcy|bankrupt|insolvent)\b"
        r"|(?:evicted|foreclosed\s+on|in\s+foreclosure|in\s+collections"
        r"|behind\s+on\s+(?:(?:my|his|her|their)\s+)?(?:rent|mortgage|payments|bills|loans?)"
        r"|defaulted\s+on|in\s+(?:serious\s+|deep\s+|massive\s+)?debt|drowning\s+in\s+debt"
        r"|buried\s+in\s+debt|on\s+food\s+stamps|on\s+welfare"
        r"|living\s+paycheck\s+to\s+paycheck)\b"
        r"|(?:am|is|are|was|were|'m|'s|'re)\s+(?:(?:flat|completely|totally|dead|so)\s+)?"
        r"broke\b(?!\s+(?:the|a|an|it|my|this|that|our|their|his|her|into|down|up|out|off"
        r"|through|with|from)\b)",
        _SUBJECT_F,
    ),
)
_CURRENCY_SIGNS = ("$", "€", "£", "¥", "₹")
_CURRENCY_WORDS = _word_set(
    "dollars euro euros pounds usd eur gbp chf cad aud inr rupees bucks million thousand grand"
)
_K_AMOUNT_RE = re.compile(r"\d ?k\b")


def _has_amount(scan: _Scan) -> bool:
    return scan.digits > 0 and (
        any(sign in scan.text for sign in _CURRENCY_SIGNS)
        or bool(_CURRENCY_WORDS & scan.words)
        or _K_AMOUNT_RE.search(scan.low_ascii) is not None
    )


def _fact_detector(facts: tuple[_Fact, ...], before: int, after: int) -> Detector:
    def detect(scan: _Scan) -> bool:
        words = scan.words
        amount: bool | None = None
        for fact in facts:
            hits = fact.anchors & words
            if not hits:
                continue
            if fact.needs_amount:
                if amount is None:
                    amount = _has_amount(scan)
                if not amount:
                    continue
            low, text = scan.low, scan.text
            for start, end in scan.windows(hits, before, after):
                pos = start
                while (match := fact.predicate.search(low, pos, end)) is not None:
                    p = match.start()
                    pos = p + 1
                    if p and low[p - 1].isalnum() and low[p] != "'":
                        continue  # starts inside a word
                    if _NOUN_AFTER.match(text, match.end()):
                        continue
                    if fact.person.search(text, max(0, p - _SUBJECT_REACH), p):
                        return True
        return False

    return detect


_rule(
    "health_fact",
    "a health fact about a person",
    _fact_detector(_HEALTH_FACTS, before=70, after=40),
)
_rule(
    "financial_fact",
    "a financial fact about a person",
    _fact_detector(_FINANCIAL_FACTS, before=90, after=60),
)
