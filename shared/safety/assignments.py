"""Generic credential forms: a JSON Web Token, a connection string with a password, an HTTP
authorization credential, and a password, secret, token or API key given a literal value
(KEY=value, "key": "value", export KEY=..., mysql -p<password>). The value checks here
(`strong_secret`, `password_like` ...) are shared with `prose` and `configs`.
"""

from __future__ import annotations

import json
import re
import string

from shared.safety.engine import RuleTable, Scan, b64_decode, letters_and_digits

TABLE = RuleTable()


def _jwt_valid(token: str) -> bool:
    raw = b64_decode(token.split(".", 1)[0])
    try:
        header = json.loads(raw) if raw else None
    except (ValueError, UnicodeDecodeError):
        return False
    return isinstance(header, dict) and isinstance(header.get("alg"), str)


# --- credentials: generic forms ---------------------------------------------------------------

TABLE.token(
    "jwt",
    "a JSON Web Token",
    r"ey[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{2,}\.[A-Za-z0-9_\-]*",
    boundary=True,
    valid=_jwt_valid,
)


def _wrapped_jwt_valid(token: str) -> bool:
    raw = b64_decode(token)
    try:
        inner = raw.decode("ascii") if raw else ""
    except UnicodeDecodeError:
        return False
    return inner.count(".") == 2 and _jwt_valid(inner)


TABLE.token(  # a JWT in base64 again (a header value, a Kubernetes secret)
    "jwt",
    "a JSON Web Token",
    r"ZXlK[A-Za-z0-9+/]{40,}={0,2}",
    needles=("ZXlK",),
    boundary=True,
    valid=_wrapped_jwt_valid,
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


def _connection_string(scan: Scan) -> bool:
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


TABLE.add(
    "connection_string_credentials",
    "a connection string or URL with a password",
    _connection_string,
)
TABLE.token(
    "authorization_header",
    "an HTTP authorization credential",
    r"authorization[\"']?\s*[:=]\s*[\"']?(?:bearer|basic|token|bot|apikey)\s+"
    r"([a-z0-9._~+/=\-]{16,})",
    needles=("authorization",),
    lower=True,
    group=1,
    valid=letters_and_digits,
)
TABLE.token(
    "authorization_header",
    "a bearer token",
    r"bearer\s+([a-z0-9._~+/\-]{20,}=*)",
    needles=("bearer",),
    lower=True,
    boundary=True,
    group=1,
    valid=letters_and_digits,
)

# --- credentials: password / secret / token / key given a value -------------------------------

# The last word of a key that makes its value a credential ("db_password", "apiKey",
# "AWS_SECRET_ACCESS_KEY", "x-api-key", "PGPASSWORD"); "password_hash" or
# "SECRET_KEY_SETTING_NAME" end in another word and pass.
_SECRET_LAST = frozenset(
    "password passwd pwd pw passphrase passcode passwort pass secret secrets credential "
    "credentials creds apikey pat".split()
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


def is_secret_key(key: str) -> bool:
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


def strong_secret(value: str) -> bool:
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


def password_like(value: str) -> bool:
    """A value with nothing telling around it (after "password" with no "is", before "is the
    root password"): letters, a digit, and a symbol or mixed case ("Zx9!kq2LmP", not
    "argon2id", "SHA256" or a flag like "-Xmx2G")."""
    v = value.rstrip(".,;:!?")
    if v.startswith("-") or not strong_secret(v):
        return False
    if not (any(c.isdigit() for c in v) and any(c.isalpha() for c in v)):
        return False
    return bool(_SYMBOL_RE.search(v)) or any(c.islower() for c in v) and any(c.isupper() for c in v)


def weak_secret(value: str) -> bool:
    """A value in an env-style line (KEY=value): anything literal of four or more chars."""
    v = value.strip().rstrip(".,;")
    if len(v) < 4 or _is_placeholder(v) or _PATHISH_RE.search(v) or _CODE_RE.match(v):
        return False
    return not v.startswith(("$", "%"))


def quoted_secret(value: str) -> bool:
    v = value.strip()
    if len(v) < 4 or _is_placeholder(v) or _PATHISH_RE.search(v):
        return False
    # A sentence (a label, a hint, an error message) is not a secret.
    return not (
        any(c.isspace() for c in v) and any(w in _STOPWORDS for w in _WORDS_RE.findall(v.lower()))
    )


def command_line_password(value: str) -> bool:
    """A literal password after a flag: `-pchangeme` counts, `-u user:password` does not."""
    return strong_secret(value) or weak_secret(value) and not _IDENT_RE.match(value)


_UNQUOTED_RE = re.compile(r"[^\s\"'`,;&()\[\]{}<>]+")
_ANNOTATION_RE = re.compile(r"[A-Za-z_][\w.\[\], |]*?\s*=(?!=)\s*")
_KEY_CHARS = frozenset(string.ascii_letters + string.digits + "_.-")
_OPERATORS = ("=", ":")


def value_at(text: str, pos: int) -> tuple[str, bool, int] | None:
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
    if found_key is None or not is_secret_key(found_key[0]):
        return False
    key, start = found_key
    pos = op_pos + (2 if text.startswith((":=", "=>"), op_pos) else 1)
    while pos < len(text) and text[pos] in " \t":
        pos += 1
    found = value_at(text, pos)
    if found is None:
        return False
    value, quoted, end = found
    if op == ":" and not quoted:
        annotation = _ANNOTATION_RE.match(text, pos)  # password: str = "..."
        if annotation:
            found = value_at(text, annotation.end())
            if found is None:
                return False
            value, quoted, end = found
    if quoted:
        return quoted_secret(value)
    if end < len(text) and text[end] in "([":
        return False  # a call or a subscript: get_password(), os.environ["PW"]
    env_style = key.upper() == key or text[max(0, start - 7) : start] == "export "
    return weak_secret(value) if env_style else strong_secret(value)


_ASSIGN_NEEDLES = ("pass", "pw", "secret", "token", "key", "cred", "pat")


def _assignment(scan: Scan) -> bool:
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


TABLE.add("password_assignment", "a password, secret, token or API key value", _assignment)
TABLE.token(
    "password_assignment",
    "a password on a command line",
    r"mysql(?:dump|admin|import|show|check)?\s[^\n]*?\s-p([^\s\"'`]{4,})",
    needles=("mysql",),
    boundary=True,
    group=1,
    valid=command_line_password,
)
