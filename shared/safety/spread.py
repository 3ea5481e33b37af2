"""A secret split over a memory file's entries: the texts the whole-file check reads.

An entry is one line of USER.md or MEMORY.md (`- entry`), so a model that saves a token in
two parts leaves "...ghp_16C7e42F292c" at the end of one entry and "6912E7710c8..." at the
start of the next, or each part after a few words of its own ("part 2: 6912E77..."); a
password's sentence can stop before its value ("The admin password is") and the value make
the next entry. The entries are read here as the file's text, whatever its separator was:

- `glued`: the entries glued end to start (a token, a key body or a card number cut at an
  entry's end); the package tries the rules for tokens and numbers on it;
- `parts`: each entry's token-like parts glued to the next entry's (the parts with words of
  their own); the token rules only (numbers glued from many entries would make cards);
- `continued`: an entry left open (ending in ":", "=", "is", "est", "ist", "es" ...) with the
  entry after it; the package tries the password rules too on these.

Parts far apart, with other entries between, are not put together.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

# A part of a token: letters, digits and the punctuation tokens and base64 use, with a digit
# (words are not parts of a token; a part without a digit is rare enough to leave out).
_PART_RE = re.compile(r"[A-Za-z0-9_\-+/=]*\d[A-Za-z0-9_\-+/=]*")
_PART_MIN = 6
# An entry whose last words wait for a value: a colon, an equals sign, an arrow or a verb.
_OPEN_RE = re.compile(
    r"(?:[:=]|->|=>|\u2192|\b(?:is|was|are|ist|lautet|war|est|était|sera|es|era|será|to))\s*\Z",
    re.IGNORECASE,
)


def _parts(entry: str) -> str:
    return " ".join(p for p in _PART_RE.findall(entry) if len(p) >= _PART_MIN)


def glued(entries: Sequence[str]) -> str:
    """The entries glued end to start."""
    return "".join(entries)


def parts(entries: Sequence[str]) -> str:
    """Each entry's token-like parts, glued to the next entry's."""
    return "".join(_parts(entry) for entry in entries)


def continued(entries: Sequence[str]) -> Iterator[str]:
    """Each entry left open, with the entry after it."""
    for entry, after in zip(entries, entries[1:], strict=False):
        if _OPEN_RE.search(entry):
            yield f"{entry} {after}"
