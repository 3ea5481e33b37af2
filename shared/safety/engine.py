"""What every rule shares: the scanned text, the rule table and the token-rule builder.

`normalize` folds look-alike characters; `Scan` holds the text with what several rules need
computed once (its ASCII copy, lower-case form, shape, words, digit count, long runs, anchor
windows); `RuleTable` collects one area's rules in check order, `RuleTable.token` builds the
usual rule for a token with a recognisable shape, and `RuleTable.family` adds many rules that
are tried together behind one cheap gate (the provider tables). Small helpers used by more than
one area (placeholder tokens, the token search, base64url, letters-and-digits) live here too.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import re
import string
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib import resources

# --- the text, with what several rules need computed once -----------------------------------

# Unicode's Default_Ignorable_Code_Point characters (DerivedCoreProperties.txt): invisible when
# shown, so a secret written with them inside ("gh\u200bp_...") reads as the secret.
_IGNORABLE = (
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
# Where the confusables data would fold a character otherwise than the rules need: curly
# double quotes are quotes ('"', not the data's two apostrophes).
_OVERRIDES = {"\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"'}


@functools.cache
def fold_table() -> dict[str, str]:
    """Each character that NFKC leaves alone but that looks like ASCII, with the ASCII it looks
    like, from Unicode's confusables data (confusables.txt) as the `confusable-homoglyphs`
    package ships it; the default-ignorable characters with "". Built on first use."""
    data = resources.files("confusable_homoglyphs").joinpath("confusables.json")
    groups: dict[str, list[dict[str, str]]] = json.loads(data.read_text(encoding="utf-8"))
    table: dict[str, str] = {}
    for char, homoglyphs in groups.items():
        if len(char) != 1 or char.isascii():
            continue
        for homoglyph in homoglyphs:
            if homoglyph["c"].isascii():
                table[char] = homoglyph["c"]
                break
    table.update(_OVERRIDES)
    for first, last in _IGNORABLE:
        for code in range(first, last + 1):
            table[chr(code)] = ""
    return table


def normalize(text: str) -> str:
    """The text the rules match: NFKC (full-width digits, ligatures), then every character that
    looks like ASCII as that ASCII (Cyrillic "р" as "p", "ǀ" as "l") and without the invisible
    ones (zero-width space, soft hyphen, bidi controls). ASCII text is returned as it is."""
    if text.isascii():
        return text
    text = unicodedata.normalize("NFKC", text)
    table = fold_table()
    # A replace per distinct character found: far cheaper than str.translate over the text.
    for char in {c for c in set(text) if c > "\x7f"}:
        folded = table.get(char)
        if folded is not None:
            text = text.replace(char, folded)
    return text


# bytes.translate is a table lookup per byte; str.translate with a dict is far slower once a
# text holds one non-ASCII character. Words are compared as UTF-8 bytes.
_TO_SPACE = bytes.maketrans(
    (string.punctuation + "\t\n\r\f\v").encode(), b" " * len(string.punctuation + "\t\n\r\f\v")
)


# Letters, digits, _ and - as "x", everything else as a space: a long run of x is where a token
# with no punctuation in its prefix ("LTAI...", "dapi...") can start.
_RUN_CHARS = (string.ascii_letters + string.digits + "_-").encode()
_RUNS = bytes((120 if b in _RUN_CHARS else 32) for b in range(256))
_RUN_LENGTH = 16
_RUN = b"x" * _RUN_LENGTH

_SHAPE = bytes.maketrans(
    (string.digits + string.ascii_uppercase + string.ascii_lowercase).encode(),
    b"0" * 10 + b"A" * 26 + b"a" * 26,
)


def word_set(words: str) -> frozenset[bytes]:
    return frozenset(w.encode() for w in words.split())


class Scan:
    """The text and, computed on first use, its lower-case form, words, digit count, shape and
    long runs."""

    __slots__ = ("text", "ascii", "_low", "_low_ascii", "_shape", "_words", "_digits", "_runs")

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
        self._runs: list[int] | None = None

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
    def runs(self) -> list[int]:
        """Where the runs of 16 or more letters, digits, _ and - start: the few places in a chat
        text where a token can begin (one byte translation, then substring searches)."""
        if self._runs is None:
            runs, flat = [], self.ascii.encode().translate(_RUNS)
            i = flat.find(_RUN)
            while i != -1:
                runs.append(i)
                end = flat.find(b" ", i + _RUN_LENGTH)
                if end == -1:
                    break
                i = flat.find(_RUN, end)
            self._runs = runs
        return self._runs

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

Detector = Callable[[Scan], bool]


@dataclass(frozen=True)
class Rule:
    id: str
    reason: str


Finder = Callable[[Scan], Rule | None]
# One entry of the check order: a rule with its detector, or (None, finder) for a family whose
# finder returns the member that matched.
Check = tuple[Rule, Detector] | tuple[None, Finder]


_FILLER_RE = re.compile(r"(?i)example|xxxx|\.\.\.|\u2026|<|>|your[_-]")
WORDCHAR = frozenset(string.ascii_letters + string.digits + "_")


def is_filler(token: str) -> bool:
    """A full-length token that is visibly a placeholder (documentation, redaction)."""
    return len(set(token[-20:].lower())) < 5 or bool(_FILLER_RE.search(token))


class RuleTable:
    """One area's rules, in the order they are tried; the package joins the areas' tables."""

    def __init__(self) -> None:
        self.rules: list[Rule] = []  # every rule, families' members included
        self.checks: list[Check] = []  # what check_text runs, in order

    def add(self, rule_id: str, reason: str, detect: Detector) -> None:
        rule = Rule(rule_id, reason)
        self.rules.append(rule)
        self.checks.append((rule, detect))

    def family(self, members: Iterable[Rule], find: Finder) -> None:
        """Rules tried as one check: `find` gates them all at once (a word, a prefix) and
        returns the member that matched, so a hundred rare providers cost one set lookup."""
        self.rules.extend(members)
        self.checks.append((None, find))

    def token(
        self,
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

        def detect(scan: Scan) -> bool:
            if needles:
                haystack = scan.low if lower else scan.text
                for needle in needles:
                    if needle in haystack:
                        break
                else:
                    return False
            text = scan.ascii
            return token_found(
                search, text, scan.low_ascii if lower else text, boundary, group, valid
            )

        self.add(rule_id, reason, detect)


def token_found(
    search: Callable[..., re.Match[str] | None],
    text: str,
    haystack: str,
    boundary: bool = True,
    group: int | str = 0,
    valid: Callable[[str], bool] | None = None,
) -> bool:
    """Whether `search` finds a real token in `haystack` (`text` or its lower-case copy; the
    value is read from `text`): not continuing a word on its left (with `boundary`), not filler,
    and passing `valid`."""
    match = search(haystack)
    while match is not None:
        start = match.start()
        if not (boundary and start and text[start - 1] in WORDCHAR):
            span = match.span(group) if match.group(group) else match.span()
            value = text[span[0] : span[1]]
            if not is_filler(value) and (valid is None or valid(value)):
                return True
        match = search(haystack, start + 1)
    return False


def b64_decode(part: str) -> bytes | None:
    try:
        return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except (binascii.Error, ValueError):
        return None


def letters_and_digits(value: str) -> bool:
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)
