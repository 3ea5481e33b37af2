"""Full-text search over the sessions' text: titles and messages, tool results included.

`session_text` holds one row per message (user, assistant, tool) and one per title; the
index's writers keep it current (`add`, `set_title`, `replace_session`, `forget`). What
differs between SQLite FTS5 and PostgreSQL's tsvector is behind one interface
(shared.index.fulltext); the rest is here, so both backends answer alike:

- every word of the query must match (AND): by default any word starting with its stem, so
  word forms match (shared.index.query says how, and the syntax: `word*`, `"exact"`);
- matching texts are read newest first in tiers (TIER_SESSIONS sessions, at most WINDOW
  texts) and ranked within a tier (`search` says how), so a word found in every message
  costs a tier per page, never a scan; at most MAX_TIERS tiers are read (another word
  narrows a search that common);
- ranking is BM25-style term frequency with length normalisation, the same formula in Python
  for both engines; a title match weighs TITLE_WEIGHT times a message match;
- a snippet is cut around the first match of the best message, with highlight offsets as
  data (never markup: the text is the user's and is shown as text).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import ColumnElement

from shared.core import collector
from shared.core.messages import content_text
from shared.core.text import for_index
from shared.db.database import Executor, dialect_of
from shared.db.orm import SessionText
from shared.index import fts5, fulltext, tsvector
from shared.index.fulltext import Term
from shared.index.query import parse_query

__all__ = ["Hit", "Term", "add_snippets", "parse_query", "search", "snippet"]

WINDOW = 2000
TIER_SESSIONS = 500  # ten pages of the list: a tier is read no further once it has as many
MAX_TIERS = 10
PER_SESSION = 5  # texts of one session ranked per tier
SLACK = 10  # sessions filtered beyond those a page needs, for the filters' refusals
TITLE_WEIGHT = 2.0
K1, B, AVERAGE_CHARS = 1.2, 0.75, 400
SNIPPET_CHARS = 160
INDEXED_ROLES = ("user", "assistant", "tool")  # never the system prompt
TITLE = "title"


def engine_for(db: Executor) -> fulltext.Engine:
    """The full-text engine of `db`'s backend."""
    return tsvector.POSTGRES if dialect_of(db) == "postgresql" else fts5.SQLITE


@dataclass(slots=True)
class Candidate:
    """A matching text: a message, or a title (`message_id` "")."""

    id: int
    session_id: str
    message_id: str
    role: str
    body: str


@dataclass
class Hit:
    """A session that matched: its best-scoring text and where it is."""

    session_id: str
    score: float
    best: Candidate
    snippet: dict[str, Any] = field(default_factory=dict)

    @property
    def match(self) -> dict[str, Any]:
        if self.best.role == TITLE:
            return {"role": TITLE, "message_id": None}
        return {"role": self.best.role, "message_id": self.best.message_id}


def search(
    db: Executor,
    user_id: str,
    terms: Sequence[Term],
    *,
    wanted: int,
    keep: Callable[[list[str]], Collection[str]] = set,
    window: int | None = None,
    tiers: int | None = None,
) -> tuple[list[Hit], bool]:
    """The user's sessions whose title or messages match, `wanted` of them if there are as
    many, and whether there may be more.

    Matching texts are read newest first in tiers: the newest TIER_SESSIONS sessions' texts
    (`_tier` says how), at most `window` of them. A session belongs to the tier of its
    newest match; within a tier sessions are ranked by their best text there (`_best_texts`
    says how it is scored), the newer first on a tie. Deeper pages read more tiers, so the
    first pages never change as one pages on, and a word found in every message costs a
    tier per page, not a scan. `keep` (the list's filters) says which of a tier's sessions
    may be shown.

    Run with the collector paused (shared.core.collector says why): a tier's rows are
    thousands of short-lived tuples."""
    return collector.paused(_search, db, user_id, terms, wanted, keep, window, tiers)


def _search(
    db: Executor,
    user_id: str,
    terms: Sequence[Term],
    wanted: int,
    keep: Callable[[list[str]], Collection[str]],
    window: int | None,
    tiers: int | None,
) -> tuple[list[Hit], bool]:
    if not terms:
        return [], False
    window, tiers = window or WINDOW, tiers or MAX_TIERS
    engine = engine_for(db)
    words = [_counted(term) for term in terms]
    placed: set[str] = set()  # sessions of the tiers already read
    hits: list[Hit] = []
    before: int | None = None
    for _ in range(tiers):
        found, older = _tier(engine, db, user_id, terms, before, window)
        best = _best_texts(found, words, placed)
        placed.update(best)
        hits += _ranked(best, keep, wanted - len(hits))
        if len(hits) >= wanted:  # the tier's rest may hold more
            return hits, True
        if not older:
            return hits, False
        before = min(row[0] for row in found)
    return hits, False  # the last tier read: older matches are out of reach


def _tier(
    engine: fulltext.Engine,
    db: Executor,
    user_id: str,
    terms: Sequence[Term],
    before: int | None,
    window: int,
) -> tuple[list[fulltext.Row], bool]:
    """A tier's texts, newest first, and whether older matches may remain: the newest
    TIER_SESSIONS texts, then as many more as their sessions per text say the tier needs to
    span TIER_SESSIONS sessions, within `window` texts in all. A word in one message of a
    hundred fills a tier with sessions long before it has `window` texts, and ranking more
    of them than ten pages show only cost time (a quarter of the texts read at 1%); a word
    in most messages reads its window as before."""
    first = min(TIER_SESSIONS, window)
    found = engine.candidates(db, user_id, terms, before=before, window=first)
    if len(found) < first:
        return found, False
    sessions = len({row[1] for row in found})
    if first == window or sessions >= TIER_SESSIONS:
        return found, True
    wanted = math.ceil((TIER_SESSIONS - sessions) * first / sessions * 1.1)
    more = min(window - first, wanted)
    oldest = min(row[0] for row in found)
    rest = engine.candidates(db, user_id, terms, before=oldest, window=more)
    return found + rest, len(rest) == more


def _counted(term: Term) -> str:
    """What a term's frequency in a text is counted by: the start its forms share."""
    return os.path.commonprefix(term.forms) if term.also else term.word


def _best_texts(
    found: Sequence[fulltext.Row], words: Sequence[str], placed: Collection[str]
) -> dict[str, tuple[float, fulltext.Row]]:
    """Each session's best-scoring text in a tier, with its score, among the session's
    PER_SESSION newest texts there (a conversation with more matches than that in one tier
    is listed anyway; scoring them all only cost time); sessions `placed` in a newer tier
    are left out.

    A text's score is BM25's term-frequency saturation and length normalisation without
    corpus statistics (every candidate has every word): for each word, with tf its substring
    count in the text (at least 1), tf·(K1+1) / (tf + K1·(1-B+B·len/AVERAGE_CHARS)), summed,
    and times TITLE_WEIGHT for a title. Ties go to the newer text."""
    best: dict[str, tuple[float, fulltext.Row]] = {}
    scored: dict[str, int] = {}
    # The hot loop when a word is common: plain arithmetic on locals. The norm is
    # K1·(1-B) + K1·B/AVERAGE_CHARS·len, and tf·(K1+1) / (tf + norm) per word.
    fixed, per_char, top = K1 * (1 - B), K1 * B / AVERAGE_CHARS, K1 + 1
    for row in found:
        session_id = row[1]
        if session_id in placed:
            continue
        count = scored.get(session_id, 0)
        if count >= PER_SESSION:
            continue
        scored[session_id] = count + 1
        body = row[4]
        lowered, norm, value = body.lower(), fixed + per_char * len(body), 0.0
        for word in words:
            tf = lowered.count(word) or 1
            value += tf * top / (tf + norm)
        if row[3] == TITLE:
            value *= TITLE_WEIGHT
        current = best.get(session_id)
        if current is None or (value, row[0]) > (current[0], current[1][0]):
            best[session_id] = (value, row)
    return best


def _ranked(
    best: Mapping[str, tuple[float, fulltext.Row]],
    keep: Callable[[list[str]], Collection[str]],
    needed: int,
) -> list[Hit]:
    """A tier's hits, best score first (ties: the newer text), the sessions `keep` shows only,
    at least `needed` of them if the tier has as many. The sessions go through `keep` in that
    order, a page's worth at a time: a word in a few percent of the messages puts hundreds
    of sessions in a tier, and filtering them all (a query and a row each) cost more than
    the search itself. The hits are the first of those of filtering the whole tier."""
    order = sorted(best.items(), key=lambda item: (item[1][0], item[1][1][0]), reverse=True)
    hits: list[Hit] = []
    start = 0
    while start < len(order) and len(hits) < needed:
        chunk = order[start : start + needed - len(hits) + SLACK]
        shown = keep([session_id for session_id, _ in chunk])
        hits += [
            Hit(session_id, value, Candidate(*row))
            for session_id, (value, row) in chunk
            if session_id in shown
        ]
        start += len(chunk)
    return hits


def add_snippets(hits: Sequence[Hit], terms: Sequence[Term]) -> None:
    pattern = _pattern(terms)
    for hit in hits:
        hit.snippet = snippet(hit.best.body, terms, pattern=pattern)


def _pattern(terms: Sequence[Term]) -> re.Pattern[str]:
    """A term as a whole word (or a prefix): not preceded by a letter or digit, which is
    checked after the word itself (a lookbehind over it and the character before), so the
    search runs from a literal, three times faster over a long body than from the check."""
    words = (
        re.escape(word)
        + rf"(?<![^\W_].{{{len(word)}}})"
        + (r"[^\W_]*" if t.prefix else r"(?![^\W_])")
        for t in terms
        for word in t.forms
    )
    return re.compile("|".join(words), re.IGNORECASE)


def snippet(
    body: str,
    terms: Sequence[Term],
    width: int = SNIPPET_CHARS,
    *,
    pattern: re.Pattern[str] | None = None,
) -> dict[str, Any]:
    """`{text, highlights}`: about `width` characters around the first match, whitespace
    folded, `…` where text was cut; highlights are [start, end) offsets into `text`."""
    pattern = pattern or _pattern(terms)
    first = pattern.search(body)
    start = 0 if first is None else max(0, first.start() - width // 3)
    if start:
        space = body.find(" ", start, first.start() if first else None)
        start = space + 1 if space >= 0 else start
    end = min(len(body), start + width)
    if end < len(body):
        space = body.rfind(" ", start + width // 2, end)
        end = space if space > 0 else end
    cut = " ".join(body[start:end].split())
    shown = ("…" if start else "") + cut + ("…" if end < len(body) else "")
    return {"text": shown, "highlights": [[m.start(), m.end()] for m in pattern.finditer(shown)]}


# -- keeping the text current -------------------------------------------------------------


def docs_of(
    user_id: str, session_id: str, records: Iterable[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Rows for the messages among `records` that carry text."""
    docs = []
    for record in records:
        if record.get("type") != "message" or record.get("role") not in INDEXED_ROLES:
            continue
        body = for_index(content_text(record.get("content"))).strip()
        if body and isinstance(record.get("id"), str):
            docs.append(
                {
                    "user_id": user_id,
                    "session_id": session_id,
                    "message_id": record["id"],
                    "role": record["role"],
                    "body": body,
                }
            )
    return docs


def add(db: Executor, docs: list[dict[str, Any]]) -> None:
    """Insert rows, and index them; a row already there (the same message indexed twice) is
    left as it is. Called inside an index write (the caller holds the user's index lock)."""
    for start in range(0, len(docs), 1000):
        engine_for(db).insert(db, docs[start : start + 1000])


def behind(db: Executor) -> bool:
    """Whether texts wait for their batch (SQLite): a search catches up first."""
    return engine_for(db).behind(db)


def catch_up(db: Executor) -> None:
    """Index the texts the writers left for the next batch (SQLite)."""
    engine_for(db).catch_up(db)


def set_title(db: Executor, user_id: str, session_id: str, title: str | None) -> None:
    _delete(db, (SessionText.session_id == session_id) & (SessionText.message_id == ""))
    if title and title.strip():
        add(db, [title_doc(user_id, session_id, title)])


def title_doc(user_id: str, session_id: str, title: str) -> dict[str, Any]:
    return {
        "user_id": user_id,
        "session_id": session_id,
        "message_id": "",
        "role": TITLE,
        "body": for_index(title).strip(),
    }


def replace_session(
    db: Executor,
    user_id: str,
    session_id: str,
    title: str | None,
    records: Iterable[Mapping[str, Any]],
) -> None:
    """All of a session's text again, from its file (a rebuild, a clear, a fork)."""
    forget(db, [session_id])
    docs = docs_of(user_id, session_id, records)
    if title and title.strip():
        docs.append(title_doc(user_id, session_id, title))
    add(db, docs)


def forget(db: Executor, session_ids: Sequence[str]) -> None:
    for start in range(0, len(session_ids), 500):
        _delete(db, SessionText.session_id.in_(list(session_ids[start : start + 500])))


def forget_user(db: Executor, user_id: str) -> None:
    """Forget every text of a user (their account is being deleted), words of the full-text
    index included."""
    _delete(db, SessionText.user_id == user_id)
    engine_for(db).purge(db, user_id)


def _delete(db: Executor, condition: ColumnElement[bool]) -> None:
    engine_for(db).delete(db, condition)


def drop(db: Executor) -> None:
    engine_for(db).delete_all(db)
