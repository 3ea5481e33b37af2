"""A search query's words, as the full-text engines match them.

People type the form of a word they remember, not the one they wrote: "sandwich" for a chat
about sandwiches, "deployed" for one about the deployment. So by default a word matches
every word it starts (`deploy` finds "deployment"), and a word in a common English
inflection matches from its stem (`stem`: `sandwiches` finds "sandwich", `deployed` finds
"deploy"). The syntax, all of it (nothing else is an operator):

- `word`: a word starting with its stem (a word shorter than MIN_PREFIX, or one with a
  digit, matches whole: "a" finding every "about" is noise, "3" finding "365" too);
- `word*`: a word starting with `word` as typed, never stemmed;
- `"word"` (or several words between quotes): each one whole, as typed.

Every word must match (AND). No dictionary: a few suffix rules (`stem`), fixed and small, so
the same query matches the same texts on SQLite FTS5 and PostgreSQL, whose `simple`
configuration does no stemming of its own.
"""

from __future__ import annotations

import re

from shared.index.fulltext import Term

MAX_TERMS = 8
MAX_TERM_CHARS = 64
MIN_PREFIX = 3  # shorter words match whole
MIN_STEM = 4  # a suffix is never stripped below this many letters...
MIN_PLURAL_STEM = 3  # ...but for a plain plural's -s ("cats": "cat")
_TOKEN = re.compile(r'"([^"]*)"?|([^\W_]+)(\*?)')
_WORD = re.compile(r"[^\W_]+")
_SIBILANT = ("s", "x", "z", "ch", "sh")  # "-es" is a plural's ending after these
_NOT_PLURAL = ("ss", "us", "is")  # "class", "status", "this": the -s is the word's own
_DOUBLED = re.compile(r"([bdgkmnprt])\1$")  # "stopped", "running": one consonant goes


def parse_query(query: str) -> list[Term]:
    """The query's terms, at most MAX_TERMS, in the order typed; a word given twice is one
    term (the broader one when the two differ)."""
    terms: dict[str, Term] = {}
    for match in _TOKEN.finditer(query):
        quoted, word, star = match.groups()
        if quoted is not None:
            found = [Term(w.lower()[:MAX_TERM_CHARS], False) for w in _WORD.findall(quoted)]
        else:
            found = [_term(word.lower()[:MAX_TERM_CHARS], bool(star))]
        for term in found:
            known = terms.get(term.word)
            if known is None or (term.prefix and not known.prefix):
                terms[term.word] = term
    return list(terms.values())[:MAX_TERMS]


def _term(word: str, star: bool) -> Term:
    if star:
        return Term(word, True)
    if len(word) < MIN_PREFIX or not word.isalpha():
        return Term(word, False)
    base = stem(word)
    if base.endswith("y") and not word.startswith(base):  # "stories": "story" or "stories"
        return Term(base, True, also=word)
    return Term(base, True)


def stem(word: str) -> str:
    """`word` without a common English inflection, for matching as a prefix: -ies/-ied -> y
    ("stories", "copied"), -es after s, x, z, ch, sh ("sandwiches", "boxes"), -s but after
    ss, us, is ("sandwichs", not "class"), -ed, -ing and -ment ("deployed", "deploying",
    "deployment"; a doubled consonant before -ed or -ing is undone: "stopped"). The
    stem is never shorter than MIN_STEM (MIN_PLURAL_STEM for a plural): "string", "bed" and
    "bus" stay as they are. Not a real stemmer, on purpose: its errors are a few extra
    matches ("news" also finds "newer"), never a missed form of the word typed."""
    for suffix in ("ies", "ied"):
        if word.endswith(suffix) and len(word) - 3 >= MIN_STEM - 1:
            return word[:-3] + "y"
    if word.endswith("es") and word[:-2].endswith(_SIBILANT) and len(word) - 2 >= MIN_PLURAL_STEM:
        return word[:-2]
    if word.endswith("s") and not word.endswith(_NOT_PLURAL) and len(word) > MIN_PLURAL_STEM:
        return word[:-1]
    for suffix in ("ing", "ed", "ment"):
        if word.endswith(suffix) and len(word) - len(suffix) >= MIN_STEM:
            base = word[: -len(suffix)]
            return base[:-1] if suffix != "ment" and _DOUBLED.search(base) else base
    return word
