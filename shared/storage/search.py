"""Full-text search over the sessions' text: titles and messages, tool results included.

One interface, two engines. `session_text` holds one row per message (user, assistant, tool)
and one per title; the index's writers keep it current (`add`, `set_title`,
`replace_session`, `forget`). SQLite indexes it with FTS5, PostgreSQL with a tsvector column
and a GIN index (both made by the migration); an `Engine` only finds candidates. The rest is
shared, so both backends answer alike:

- every word of the query must match a whole word (AND); a word ending in `*` is a prefix;
- the newest WINDOW matching messages and WINDOW matching titles of the user are ranked, so a
  word found in every message stays fast (another word narrows such a search);
- ranking is BM25-style term frequency with length normalisation, computed from counts the
  database returns; a title match weighs TITLE_WEIGHT times a message match;
- a snippet is cut around the first match of the best message, with highlight offsets as
  data (never markup: the text is the user's and is shown as text).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from sqlalchemy import bindparam, delete, select, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from shared.storage.orm import SessionText
from shared.storage.session_store import content_text

WINDOW = 1000
MAX_TERMS = 8
MAX_TERM_CHARS = 64
TITLE_WEIGHT = 2.0
K1, B, AVERAGE_CHARS = 1.2, 0.75, 400
SNIPPET_CHARS = 160
INDEXED_ROLES = ("user", "assistant", "tool")  # never the system prompt
TITLE = "title"
_WORD = re.compile(r"([^\W_]+)(\*?)")


@dataclass(frozen=True)
class Term:
    word: str  # lower case
    prefix: bool


def parse_query(query: str) -> list[Term]:
    """The query's words (letters and digits; `*` right after one makes it a prefix)."""
    terms: dict[str, Term] = {}
    for match in _WORD.finditer(query):
        word = match.group(1).lower()[:MAX_TERM_CHARS]
        prefix = bool(match.group(2)) or terms.get(word, Term(word, False)).prefix
        terms[word] = Term(word, prefix)
    return list(terms.values())[:MAX_TERMS]


@dataclass(frozen=True)
class Candidate:
    id: int
    session_id: str
    message_id: str
    role: str
    size: int
    counts: tuple[int, ...]

    @property
    def score(self) -> float:
        norm = K1 * (1 - B + B * self.size / AVERAGE_CHARS)
        value = sum(tf * (K1 + 1) / (tf + norm) for tf in (max(c, 1) for c in self.counts))
        return value * (TITLE_WEIGHT if self.role == TITLE else 1.0)


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


class Engine(Protocol):
    """What differs between the backends: finding the newest matching rows of one user."""

    def candidates(
        self, db: Session, user_id: str, terms: Sequence[Term], *, titles: bool, window: int
    ) -> list[Candidate]: ...


def _count_columns(terms: Sequence[Term]) -> tuple[str, dict[str, Any]]:
    """SQL for how often each word occurs in the body (as a substring: the FTS match already
    made sure it occurs as a word), and its parameters."""
    parts, params = [], {}
    for n, term in enumerate(terms):
        params[f"t{n}"] = term.word
        body = "lower(t.body)"
        parts.append(f"(length({body}) - length(replace({body}, :t{n}, ''))) / {len(term.word)}")
    return ", ".join(parts), params


def _rows(db: Session, sql: str, params: dict[str, Any], terms: Sequence[Term]) -> list[Candidate]:
    rows = db.execute(text(sql), params).all()
    return [Candidate(r[0], r[1], r[2], r[3], r[4], tuple(r[5 : 5 + len(terms)])) for r in rows]


class SqliteEngine:
    """FTS5 over `session_text` (external content). The owner's id is an indexed column, so
    the match itself is per user; newest first by rowid, stopping after `window`."""

    def candidates(
        self, db: Session, user_id: str, terms: Sequence[Term], *, titles: bool, window: int
    ) -> list[Candidate]:
        words = " AND ".join(f'"{t.word}"' + ("*" if t.prefix else "") for t in terms)
        match = f'user_id:"{user_id}" AND body:({words})'
        match = f"{match} AND role:{TITLE}" if titles else f"({match}) NOT role:{TITLE}"
        counts, params = _count_columns(terms)
        sql = (
            f"SELECT t.id, t.session_id, t.message_id, t.role, length(t.body), {counts} "
            "FROM (SELECT rowid AS rid FROM session_text_fts WHERE session_text_fts MATCH :m "
            "ORDER BY rowid DESC LIMIT :w) AS c JOIN session_text AS t ON t.id = c.rid "
            "WHERE t.user_id = :u ORDER BY t.id DESC"
        )
        return _rows(db, sql, {**params, "m": match, "w": window, "u": user_id}, terms)


class PostgresEngine:
    """A tsvector column (`simple` configuration: no stemming, no stop words, as FTS5) with a
    GIN index; the planner walks (user_id, id) backwards instead when a word is common."""

    def candidates(
        self, db: Session, user_id: str, terms: Sequence[Term], *, titles: bool, window: int
    ) -> list[Candidate]:
        query = " & ".join(t.word + (":*" if t.prefix else "") for t in terms)
        counts, params = _count_columns(terms)
        role = "t.role = 'title'" if titles else "t.role <> 'title'"
        sql = (
            f"SELECT t.id, t.session_id, t.message_id, t.role, length(t.body), {counts} "
            f"FROM session_text AS t WHERE t.user_id = :u AND {role} "
            "AND t.tsv @@ to_tsquery('simple', :q) ORDER BY t.id DESC LIMIT :w"
        )
        return _rows(db, sql, {**params, "q": query, "w": window, "u": user_id}, terms)


def engine_for(db: Session) -> Engine:
    return PostgresEngine() if db.get_bind().dialect.name == "postgresql" else SqliteEngine()


def search(db: Session, user_id: str, terms: Sequence[Term], window: int = WINDOW) -> list[Hit]:
    """The user's sessions whose title or messages match, best first (ties: newest match)."""
    if not terms:
        return []
    engine = engine_for(db)
    best: dict[str, Hit] = {}
    for titles in (True, False):
        for found in engine.candidates(db, user_id, terms, titles=titles, window=window):
            hit = best.get(found.session_id)
            if hit is None or (found.score, found.id) > (hit.score, hit.best.id):
                best[found.session_id] = Hit(found.session_id, found.score, found)
    return sorted(best.values(), key=lambda h: (h.score, h.best.id), reverse=True)


def add_snippets(db: Session, hits: Sequence[Hit], terms: Sequence[Term]) -> None:
    """Cut each hit's snippet from its best text (only for the hits shown: one query)."""
    ids = [hit.best.id for hit in hits]
    if not ids:
        return
    query = select(SessionText.id, SessionText.body).where(
        SessionText.id.in_(bindparam("ids", expanding=True))
    )
    bodies: dict[int, str] = {row[0]: row[1] for row in db.execute(query, {"ids": ids})}
    for hit in hits:
        hit.snippet = snippet(bodies.get(hit.best.id, ""), terms)


def _pattern(terms: Sequence[Term]) -> re.Pattern[str]:
    words = (
        r"(?<![^\W_])" + re.escape(t.word) + (r"[^\W_]*" if t.prefix else r"(?![^\W_])")
        for t in terms
    )
    return re.compile("|".join(words), re.IGNORECASE)


def snippet(body: str, terms: Sequence[Term], width: int = SNIPPET_CHARS) -> dict[str, Any]:
    """`{text, highlights}`: about `width` characters around the first match, whitespace
    folded, `…` where text was cut; highlights are [start, end) offsets into `text`."""
    pattern = _pattern(terms)
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


def docs_of(user_id: str, session_id: str, records: Iterable[dict[str, Any]]) -> list[dict]:
    """Rows for the messages among `records` that carry text."""
    docs = []
    for record in records:
        if record.get("type") != "message" or record.get("role") not in INDEXED_ROLES:
            continue
        body = content_text(record.get("content")).strip()
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


def add(db: Session, docs: list[dict[str, Any]]) -> None:
    """Insert rows; one already there (the same message indexed twice) is left as it is."""
    if not docs:
        return
    dialect = db.get_bind().dialect.name
    make_insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    statement = make_insert(SessionText).on_conflict_do_nothing(
        index_elements=["session_id", "message_id"]
    )
    for start in range(0, len(docs), 500):
        db.execute(statement, docs[start : start + 500])


def set_title(db: Session, user_id: str, session_id: str, title: str | None) -> None:
    db.execute(
        delete(SessionText).where(
            SessionText.session_id == session_id, SessionText.message_id == ""
        )
    )
    if title and title.strip():
        add(db, [_title_doc(user_id, session_id, title)])


def _title_doc(user_id: str, session_id: str, title: str) -> dict[str, Any]:
    return {
        "user_id": user_id,
        "session_id": session_id,
        "message_id": "",
        "role": TITLE,
        "body": title.strip(),
    }


def replace_session(
    db: Session,
    user_id: str,
    session_id: str,
    title: str | None,
    records: Iterable[dict[str, Any]],
) -> None:
    """All of a session's text again, from its file (a rebuild, a clear, a fork)."""
    forget(db, [session_id])
    docs = docs_of(user_id, session_id, records)
    if title and title.strip():
        docs.append(_title_doc(user_id, session_id, title))
    add(db, docs)


def forget(db: Session, session_ids: Sequence[str]) -> None:
    for start in range(0, len(session_ids), 500):
        chunk = list(session_ids[start : start + 500])
        db.execute(delete(SessionText).where(SessionText.session_id.in_(chunk)))


def drop(db: Session) -> None:
    db.execute(delete(SessionText))
