"""A password, secret, token or PIN given in a sentence rather than as KEY=value.

Four forms, each looked for only in windows around its anchor words:

- told: a secret word, an optional "for/of/to/on/at/in <up to four words>", then "is", "was",
  "set to" ..., ":", "=" or "->", then the value: "my password is Xk9#mP2q", "Password for prod
  db = ...", "the API key for staging is ...", "my PIN is 4821". The value must look like a
  password (`strong_secret`: a digit, a symbol or mixed case) or be quoted.
- bare: a password word directly before the value, or "to" and the value: "log in with
  password Zx9!kq2LmP", "sudo password ...", "passwd ...", "changed the password to ...".
- reversed: the value, then "is/as/was the (root, admin ...) password": "use ... as the admin
  password".
- pair: "credentials/creds/login/log in as" a user and a password joined by / or ":".

Nothing tells a bare, reversed or paired value apart from an ordinary word, so it must look
like a password on its own (`password_like`: letters, a digit, and a symbol or mixed case):
"reset your password in settings", "the password field is required", "use a password manager",
"sudo passwd root" pass. Known limits: an example password named as such ("P@ssw0rd is the
classic weak password") is blocked; "a weak password" (a, an) is not a reversed form.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from shared.safety.assignments import password_like, quoted_secret, strong_secret, value_at
from shared.safety.engine import RuleTable, Scan, word_set

TABLE = RuleTable()

_PASSWORD_WORDS = (
    r"password|passwd|passwort|kennwort|wachtwoord|contrase[ñn]a|clave|senha"
    r"|mot[\s\-]+de[\s\-]+passe|mdp|passcode|passphrase|pwd|pw"
)
_SECRET_WORDS = (
    rf"{_PASSWORD_WORDS}|pin(?:\s+code|\s+number)?|api\s+key|secret\s+key|access\s+token"
    r"|auth\s+token|token|secret"
)
_QUALIFIER = (  # "for the prod db", "du wifi", "del servidor", "für den Server", "admin"
    r"(?:\s+(?:(?:for|of|to|on|at|in|für|fur|vom|von|zum|zur|pour|du|des|de|del|para|por|voor)"
    r"\b|d')(?:\s*[\w.@\-']+){1,4}?|\s+(?:admin|root|wifi|wi-fi|wlan|sudo|ssh|vpn)\b)?"
)
_VERBS = (  # longest first: the value is checked after the match, which does not backtrack
    r"has\s+been\s+changed\s+to|(?:was\s+)?changed\s+to|is\s+now|is\s+still|will\s+be"
    r"|should\s+be|set\s+to|became|remains|is|was|are|ist|lautet|war|est|était|sera|es|era"
    r"|será|é"
)
_TOLD_RE = re.compile(  # on lower-case text
    rf"(?P<what>{_SECRET_WORDS}){_QUALIFIER}(?:\s+(?:{_VERBS})\b\s*:?|\s*(?:[:=]|->|=>|\u2192))\s*"
)
_BARE_RE = re.compile(rf"(?:{_PASSWORD_WORDS})\s+(?:to\s+)?")
_REVERSED_RE = re.compile(  # the value is the word before the match
    r"\s(?:is|as|was)\s+(?!an?\s)(?:(?:the|my|our|your|his|her|their|its)\s+)?"
    rf"(?:[\w\-]+\s+){{0,2}}(?:{_PASSWORD_WORDS})\b"
)
_LAST_WORD_RE = re.compile(r"\S+\Z")
_PAIR_RE = re.compile(
    r"(?:credentials|creds|login|log\s+in\s+as|sign\s+in\s+as)\b\s*(?:[:=]|\s(?:is|are)\s)?\s*"
    r"[^\s/:]+\s*[/:]\s*(?P<value>[^\s\"'`]+)"
)
_PASSWORD_ANCHORS = word_set(
    """password passwd passwort kennwort wachtwoord contraseña contrasena clave senha passe mdp
    passcode passphrase pwd pw"""
)
_SECRET_ANCHORS = _PASSWORD_ANCHORS | word_set("pin key token secret")
_PAIR_ANCHORS = word_set("credentials creds login log sign")
_PIN_RE = re.compile(r"\d{4,8}")
_VALUE_RE = re.compile(r"[^\s\"'`]+")  # in a sentence a password runs to the next space
_CALL_RE = re.compile(r"[A-Za-z_][\w.]*[(\[]")  # get_password(), os.environ["PW"]


def _value(text: str, pos: int) -> tuple[str, bool] | None:
    """The value at `pos`: (quoted text, True) or (the next word without the punctuation that
    ends a sentence, False); None for a call or a subscript."""
    if text.startswith(("'", '"', "`"), pos):
        found = value_at(text, pos)
        return None if found is None else (found[0], True)
    match = _VALUE_RE.match(text, pos)
    if match is None or _CALL_RE.match(match.group(0)):
        return None
    return match.group(0).rstrip(".,;:!?)]}"), False


def _told(match: re.Match[str], text: str) -> bool:
    found = _value(text, match.end())
    if found is None:
        return False
    value, quoted = found
    if match.group("what").startswith("pin"):
        return _PIN_RE.fullmatch(value) is not None
    return quoted_secret(value) if quoted else strong_secret(value)


def _bare(match: re.Match[str], text: str) -> bool:
    found = _value(text, match.end())
    return found is not None and password_like(found[0])


def _reversed(match: re.Match[str], text: str) -> bool:
    value = _LAST_WORD_RE.search(text, max(0, match.start() - 64), match.start())
    return value is not None and password_like(value.group(0))


def _paired(match: re.Match[str], text: str) -> bool:
    return password_like(text[match.start("value") : match.end("value")])


Check = Callable[[re.Match[str], str], bool]
# Each form runs in windows around its own anchor words: (pattern, anchors, window before and
# after an anchor, whether the match starts at the anchor word, the check of the value).
_FORMS: tuple[tuple[re.Pattern[str], frozenset[bytes], int, int, bool, Check], ...] = (
    (_TOLD_RE, _SECRET_ANCHORS, 20, 120, True, _told),
    (_BARE_RE, _PASSWORD_ANCHORS, 8, 60, True, _bare),
    (_REVERSED_RE, _PASSWORD_ANCHORS, 60, 0, False, _reversed),
    (_PAIR_RE, _PAIR_ANCHORS, 0, 80, True, _paired),
)
_ANCHORS = _SECRET_ANCHORS | _PAIR_ANCHORS


def _prose_secret(scan: Scan) -> bool:
    words = scan.words
    if _ANCHORS.isdisjoint(words):
        return False
    low, text = scan.low, scan.text
    for form, anchors, before, after, at_word, check in _FORMS:
        hits = anchors & words
        if not hits:
            continue
        for start, end in scan.windows(hits, before, after):
            pos = start
            while (match := form.search(low, pos, end)) is not None:
                pos = match.start() + 1
                if at_word and match.start() and low[match.start() - 1].isalnum():
                    continue  # starts inside a word
                if check(match, text):
                    return True
    return False


TABLE.add("password_assignment", "a password, secret, token or API key value", _prose_secret)
