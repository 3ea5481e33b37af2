"""The one rule for characters in text that people send to Eonyx, and for showing text.

Refused in every text field (a 4xx naming the field, before anything is saved):
- C0 control characters other than tab, newline and carriage return (NUL, BEL, backspace,
  ESC that starts terminal escape sequences...), DEL and the C1 controls (U+007F-U+009F);
- the bidirectional embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069), which
  make a terminal or a page show text in another order than the one it is stored in;
- lone surrogates (U+D800-U+DFFF): not text, and not writable as UTF-8.
Single-line text (titles, names, usernames, ids, search terms) refuses tab, newline and
carriage return too.

The HTTP edge applies the rule through one marshmallow field (api/schemas.py); the domain
applies it again to text that comes another way (the CLI, a title cut from a message).
`strip_forbidden()` removes what the rule refuses from text Eonyx derives itself, and
`printable()` escapes it for a terminal.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from shared.core.errors import InvalidInput

# The refused characters as regular-expression classes, written once: Python's `re` and the
# JSON Schema patterns of the OpenAPI document (ECMA-262) read these escapes alike. The
# documented classes leave out the lone surrogates, which no UTF-8 text can carry (only a
# JSON `\ud800` escape can) and which many regular-expression engines cannot name.
_BIDI = r"\u202a-\u202e\u2066-\u2069"
MULTI_LINE_CLASS = r"\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f" + _BIDI
SINGLE_LINE_CLASS = r"\x00-\x1f\x7f-\x9f" + _BIDI
MULTI_LINE_PATTERN = f"^[^{MULTI_LINE_CLASS}]*$"
SINGLE_LINE_PATTERN = f"^[^{SINGLE_LINE_CLASS}]*$"
# With at least one character that is not white space (names, messages).
NON_BLANK_LINE_PATTERN = (
    f"^[^{SINGLE_LINE_CLASS}]*[^\\s{SINGLE_LINE_CLASS}][^{SINGLE_LINE_CLASS}]*$"
)
NON_BLANK_TEXT_PATTERN = f"^[^{MULTI_LINE_CLASS}]*[^\\s{MULTI_LINE_CLASS}][^{MULTI_LINE_CLASS}]*$"
_SURROGATES = r"\ud800-\udfff"
_MULTI = re.compile(f"[{MULTI_LINE_CLASS}{_SURROGATES}]")
_SINGLE = re.compile(f"[{SINGLE_LINE_CLASS}{_SURROGATES}]")
_MULTI_SHOWN = re.compile(f"[{MULTI_LINE_CLASS}{_SURROGATES}\\r]")  # a lone CR rewrites a line
_SURROGATE = re.compile(f"[{_SURROGATES}]")


def _describe(char: str) -> tuple[str, str]:
    """What the character is, and a note on why it is refused where that is not obvious."""
    code = ord(char)
    name = f"U+{code:04X}"
    if 0xD800 <= code <= 0xDFFF:
        return f"a lone surrogate ({name})", ", which is not valid Unicode"
    if char in "\t\n\r":
        return f"a tab or line break ({name})", ", which a one-line field cannot hold"
    if 0x202A <= code <= 0x202E or 0x2066 <= code <= 0x2069:
        return f"a bidirectional control character ({name})", ""
    return f"a control character ({name})", ""


def problem(text: str, *, single_line: bool = False) -> str | None:
    """Why `text` breaks the rule (the first offending character and where), or None."""
    found = (_SINGLE if single_line else _MULTI).search(text)
    if found is None:
        return None
    what, note = _describe(found.group())
    return f"contains {what} at position {found.start()}{note}"


def check(text: str, field: str, *, single_line: bool = False) -> str:
    """`text` itself, or InvalidInput naming `field` and what is wrong with it."""
    found = problem(text, single_line=single_line)
    if found is not None:
        raise InvalidInput(f"{field} {found}", code="invalid_text")
    return text


def surrogate_in(value: Any, where: str = "") -> str | None:
    """Where the first lone surrogate sits in JSON data (`messages[1].content`, or "" for
    `value` itself), in a string or a key; None when there is none. For data passed on as a
    whole (the facade's requests), whose every string must be writable as UTF-8."""
    if isinstance(value, str):
        return where if _SURROGATE.search(value) else None
    if isinstance(value, Mapping):
        for key, item in value.items():
            name = f"{where}.{key}" if where else str(key)
            if isinstance(key, str) and _SURROGATE.search(key):
                return where or "a key"
            found = surrogate_in(item, name)
            if found is not None:
                return found
    elif isinstance(value, list | tuple):
        for number, item in enumerate(value):
            found = surrogate_in(item, f"{where}[{number}]")
            if found is not None:
                return found
    return None


def strip_forbidden(text: str, *, single_line: bool = False) -> str:
    """`text` without the characters the rule refuses (for text Eonyx derives itself; in
    single-line text a tab or line break becomes a space)."""
    if single_line:
        text = re.sub(r"[\t\n\r]", " ", text)
    return (_SINGLE if single_line else _MULTI).sub("", text)


def for_index(text: str) -> str:
    """Text as the SQL index may hold it: PostgreSQL text cannot hold NUL, and a lone
    surrogate cannot be encoded, so NUL is dropped and a surrogate becomes U+FFFD. The session
    file keeps the exact text; only the cache is cleaned."""
    return _SURROGATE.sub("\ufffd", text.replace("\x00", ""))


def printable(text: str, *, multiline: bool = False) -> str:
    """`text` safe for a terminal: every refused character (and, for one-line output, tab and
    line breaks) shown as an escape such as `\\x1b` or `\\u202e`, so stored text can neither
    move the cursor, recolour the screen nor reorder what is shown."""
    if multiline:
        text = text.replace("\r\n", "\n")
        pattern = _MULTI_SHOWN
    else:
        pattern = _SINGLE
    return pattern.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)
