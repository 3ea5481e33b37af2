"""Search over titles and message text, on SQLite FTS5 and on PostgreSQL full-text search
(every test runs on both backends): ranked, with snippets, only ever the caller's own."""

from __future__ import annotations

import pytest
from alembic import command
from sqlalchemy import text

from shared.accounts import people
from shared.accounts.people import Principal
from shared.core.clock import isoformat, utcnow
from shared.core.messages import new_message_id
from shared.db.database import alembic_config
from shared.index import fts5, search, sync
from shared.runtime import Runtime
from shared.sessions import lifecycle
from shared.sessions import service as session_service
from tests.conftest import Account


def me(account: Account) -> Principal:
    return Principal(account.user_id, account.username, False, "web", "")


def chat_in(rt: Runtime, who: Account, title: str, *lines: str | tuple[str, str]) -> str:
    """A session with messages: plain strings alternate user/assistant; (role, text) pairs
    say the role."""
    session_id = session_service.create_session(rt, me(who), rt.memory, title=title).id
    records = []
    for n, line in enumerate(lines):
        role, content = line if isinstance(line, tuple) else (("user", "assistant")[n % 2], line)
        records.append(
            {
                "type": "message",
                "id": new_message_id(),
                "role": role,
                "content": content,
                "created_at": isoformat(utcnow()),
            }
        )
    if records:
        session_service.append_records(rt, me(who), session_id, records)
    return session_id


def found(rt: Runtime, who: Account, query: str, **options: object) -> list[str]:
    results, _ = session_service.search_sessions(rt, me(who), query, **options)  # type: ignore[arg-type]
    return [result.row.id for result in results]


def test_titles_rank_above_text_and_frequent_mentions_above_passing_ones(
    rt: Runtime, alice: Account
) -> None:
    passing = chat_in(rt, alice, "Groceries", "we need milk, eggs and a parser for Tuesday")
    frequent = chat_in(rt, alice, "Tokens", "the parser, my parser: a parser for Tuesday")
    titled = chat_in(rt, alice, "Parser refactor", "let us start")
    chat_in(rt, alice, "Lunch", "sandwich", "soup")
    assert found(rt, alice, "parser") == [titled, frequent, passing]
    assert found(rt, alice, "PARSER my") == [frequent]  # every word must match
    assert found(rt, alice, "pars") == [titled, frequent, passing]  # a prefix by default...
    assert found(rt, alice, '"pars"') == []  # ...a whole word between quotes
    assert found(rt, alice, '"parser"') == [titled, frequent, passing]


def test_word_forms_find_each_other(rt: Runtime, alice: Account) -> None:
    """The issue's examples: the form typed need not be the form written, on both backends."""
    lunch = chat_in(rt, alice, "Lunch", "two sandwiches and a soup")
    deploy = chat_in(rt, alice, "Release", "the deployment failed at noon")
    plain = chat_in(rt, alice, "Kitchen", "one sandwich, then deploy the stories")
    story = chat_in(rt, alice, "Reading", "a story a night")
    assert sorted(found(rt, alice, "sandwich")) == sorted([lunch, plain])
    assert sorted(found(rt, alice, "sandwiches")) == sorted([lunch, plain])
    assert sorted(found(rt, alice, "deploy")) == sorted([deploy, plain])
    assert sorted(found(rt, alice, "deployed")) == sorted([deploy, plain])
    assert sorted(found(rt, alice, "stories")) == sorted([plain, story])  # -ies: story too
    assert found(rt, alice, '"sandwiches"') == [lunch]  # quoted: exactly that form
    assert found(rt, alice, "deployment*") == [deploy]  # a typed prefix is not stemmed
    assert found(rt, alice, "sandwiches deployed") == [plain]  # every word still must match

    results, _ = session_service.search_sessions(rt, me(alice), "deployed")
    marked = {
        r.row.id: [r.hit.snippet["text"][a:b] for a, b in r.hit.snippet["highlights"]]
        for r in results
    }
    assert marked[deploy] == ["deployment"]  # the form found is highlighted, whole
    assert marked[plain] == ["deploy"]


def test_a_snippet_surrounds_the_match_with_its_highlights(rt: Runtime, alice: Account) -> None:
    filler = "word " * 60
    body = f"{filler}the quick Brown fox jumps over the lazy dog {filler}".strip()
    session_id = chat_in(rt, alice, "Animals", body)
    results, _ = session_service.search_sessions(rt, me(alice), "brown dog")
    assert [r.row.id for r in results] == [session_id]
    hit = results[0].hit
    snippet = hit.snippet
    assert snippet["text"].startswith("…")
    assert snippet["text"].endswith("…")
    assert len(snippet["text"]) <= search.SNIPPET_CHARS + 2
    marked = [snippet["text"][a:b] for a, b in snippet["highlights"]]
    assert marked == ["Brown", "dog"]
    assert hit.match == {"role": "user", "message_id": hit.best.message_id}

    title_hit = session_service.search_sessions(rt, me(alice), "animals")[0][0].hit
    assert title_hit.match == {"role": "title", "message_id": None}
    assert title_hit.snippet == {"text": "Animals", "highlights": [[0, 7]]}


def test_another_users_text_is_never_found(rt: Runtime, alice: Account, bob: Account) -> None:
    chat_in(rt, alice, "Alice's secret", "my zeppelin plans")
    mine = chat_in(rt, bob, "Bob", "nothing about airships")
    assert found(rt, bob, "zeppelin") == []
    assert found(rt, bob, "secret") == []
    assert found(rt, bob, "zeppelin*") == []
    assert found(rt, bob, "airships") == [mine]
    assert len(found(rt, alice, "zeppelin")) == 1


def test_a_word_other_users_have_too_finds_all_of_ones_own_and_only_them(
    rt: Runtime, alice: Account, bob: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite matches the words alone among every user's newest PROBE matches (2 here), then
    the caller's older ones with their id in the match; either way, all of theirs only."""
    monkeypatch.setattr(fts5, "PROBE", 2)
    mine = []
    for n in range(4):  # interleaved: each probe sees some of Alice's matches and some of Bob's
        mine.append(chat_in(rt, alice, f"a{n}", "a heron"))
        chat_in(rt, bob, f"b{n}", "heron and heron")
    assert sorted(found(rt, alice, "heron")) == sorted(mine)
    for n in range(3):  # the newest matches are all Bob's
        chat_in(rt, bob, f"c{n}", "a heron")
    assert sorted(found(rt, alice, "heron")) == sorted(mine)
    assert len(found(rt, bob, "heron")) == 7
    monkeypatch.setattr(search, "WINDOW", 3)  # tiers of 3 texts, each probed first
    assert sorted(found(rt, alice, "heron", limit=50)) == sorted(mine)
    assert found(rt, alice, "and") == []  # only Bob's, more than PROBE times
    chat_in(rt, bob, "Egret", "one egret")
    assert found(rt, alice, "egret") == []  # only Bob's, fewer than PROBE times
    ibis = chat_in(rt, alice, "Ibis", "one ibis")
    assert found(rt, alice, "ibis") == [ibis]


def test_a_word_finds_every_form_it_starts_named_or_not(
    rt: Runtime, alice: Account, bob: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite names a word's forms from the user's vocabulary, up to MAX_FORMS of them, and
    matches a prefix starting more as a prefix: the same sessions either way; a word no text
    of the user's starts finds nothing, whoever else has it."""
    forms = ["heron", "herons", "heronry", "heronsbill"]
    made = [chat_in(rt, alice, f"s{n}", f"a {form} here") for n, form in enumerate(forms)]
    chat_in(rt, alice, "Other", "a hero, no bird")
    chat_in(rt, bob, "Bob's", "herons and a heronry")
    assert sorted(found(rt, alice, "heron")) == sorted(made)
    assert sorted(found(rt, alice, "herons")) == sorted(made)
    monkeypatch.setattr(fts5, "MAX_FORMS", 2)
    assert sorted(found(rt, alice, "heron")) == sorted(made)
    assert found(rt, alice, "heronsb") == [made[3]]
    assert found(rt, alice, "hermit") == []
    late = chat_in(rt, alice, "Late", "HERONIES, capitalised")  # a word first seen now
    assert late in found(rt, alice, "heronie*")


def test_a_deleted_account_leaves_no_words_behind(
    rt: Runtime, alice: Account, bob: Account
) -> None:
    chat_in(rt, alice, "Mine", "my zeppelin plans")
    chat_in(rt, bob, "Bob's", "my airship plans")
    people.delete_user(rt.db, rt.store, alice.user_id, actor="test")
    bobs = found(rt, bob, "plans")
    assert len(bobs) == 1
    with rt.db.session() as db:
        if db.get_bind().dialect.name == "sqlite":  # PostgreSQL keeps no vocabulary of its own
            owners = db.execute(text("SELECT DISTINCT user_id FROM session_words")).scalars()
            assert list(owners) == [bob.user_id]
    assert_fts_consistent(rt)


def test_texts_indexed_before_the_vocabulary_find_their_forms_after_the_upgrade(
    rt: Runtime, alice: Account
) -> None:
    """Migration 0014 fills the vocabulary from the texts already indexed (SQLite)."""
    made = chat_in(rt, alice, "Birds", "two pelicans and a pelicanlike shape")
    assert found(rt, alice, "pelican") == [made]
    if rt.db.engine.dialect.name != "sqlite":
        return
    config = alembic_config()
    with rt.db.engine.begin() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, "0013")
    rt.db.migrate()
    assert found(rt, alice, "pelican") == [made]
    with rt.db.session() as db:
        words = db.execute(text("SELECT word FROM session_words WHERE word LIKE 'pelic%'"))
        assert sorted(words.scalars()) == ["pelicanlike", "pelicans"]


def test_the_text_follows_appends_clears_purges_and_a_rebuild(rt: Runtime, alice: Account) -> None:
    session_id = chat_in(rt, alice, "Notes", "first: narwhal")
    assert found(rt, alice, "narwhal") == [session_id]
    chat_in_again = {
        "type": "message",
        "id": new_message_id(),
        "role": "assistant",
        "content": "second: okapi",
        "created_at": isoformat(utcnow()),
    }
    session_service.append_records(rt, me(alice), session_id, [chat_in_again])
    assert found(rt, alice, "okapi") == [session_id]
    session_service.update_session(rt, me(alice), session_id, {"title": "Zoo"})
    assert found(rt, alice, "zoo") == [session_id]
    assert found(rt, alice, "notes") == []

    with rt.db.session() as db:  # the index is a cache: dropped, it comes back with the text
        sync.drop(db)
    assert found(rt, alice, "narwhal") == [session_id]

    lifecycle.clear_session(rt, me(alice), session_id)
    assert found(rt, alice, "narwhal") == []
    assert found(rt, alice, "zoo") == [session_id]
    fork = lifecycle.fork_session(rt, me(alice), session_id, title="Zoo 2").id
    lifecycle.delete_session(rt, me(alice), session_id, purge=True)
    assert found(rt, alice, "zoo") == [fork]
    assert_fts_consistent(rt)


def test_a_message_indexed_twice_is_found_once_and_the_index_stays_whole(
    rt: Runtime, alice: Account
) -> None:
    """A row already there is left as it is (ON CONFLICT DO NOTHING), and SQLite's FTS index
    takes only the rows the insert really added (the ids INSERT ... RETURNING reports)."""
    session_id = chat_in(rt, alice, "Animals", "an okapi in the forest")
    record = {"type": "message", "id": new_message_id(), "role": "user", "content": "okapi again"}
    docs = search.docs_of(alice.user_id, session_id, [record])
    with rt.db.transaction() as db:
        search.add(db, docs)
        search.add(db, docs)  # the same message again: a writer that retries, a refold
    with rt.db.transaction() as db:
        rows = db.execute(text("SELECT count(*) FROM session_text WHERE body = 'okapi again'"))
        assert rows.scalar() == 1
    assert found(rt, alice, "okapi") == [session_id]
    assert_fts_consistent(rt)


def test_texts_waiting_for_their_batch_are_found_deleted_and_reused_cleanly(
    rt: Runtime, alice: Account
) -> None:
    """SQLite indexes texts in batches (shared/index/fts5.py): a search finds every text
    written before it, a text deleted before its batch never reaches the FTS table, and the
    ids of deleted newest texts, taken again, are indexed again."""
    keep = chat_in(rt, alice, "Keep", "an aardvark here")
    gone = chat_in(rt, alice, "Gone", "a bonobo here")
    assert found(rt, alice, "bonobo") == [gone]  # indexed before the search
    lifecycle.delete_session(rt, me(alice), gone, purge=True)  # the newest texts, indexed
    again = chat_in(rt, alice, "Again", "a dugong here")  # their ids again, not indexed yet
    brief = chat_in(rt, alice, "Brief", "an eland here")
    lifecycle.delete_session(rt, me(alice), brief, purge=True)  # never indexed
    assert found(rt, alice, "bonobo") == []
    assert found(rt, alice, "eland") == []
    assert found(rt, alice, "dugong") == [again]
    assert found(rt, alice, "aardvark") == [keep]
    assert_fts_consistent(rt)


def test_a_full_batch_is_indexed_by_the_write_that_completes_it(
    rt: Runtime, alice: Account
) -> None:
    long = chat_in(rt, alice, "Long", *[f"line {n}: an emu" for n in range(fts5.BATCH)])
    with rt.db.transaction() as db:
        if db.dialect.name == "sqlite":  # no search ran: the write indexed them itself
            match = "SELECT count(*) FROM session_text_fts WHERE session_text_fts MATCH 'emu'"
            assert db.execute(text(match)).scalar() == fts5.BATCH
    assert found(rt, alice, "emu") == [long]


def assert_fts_consistent(rt: Runtime) -> None:
    """SQLite's FTS index is kept by hand (shared/index/fts5.py): as a search sees it
    (its batch caught up), it must match its content table exactly (PostgreSQL's generated
    column keeps itself)."""
    with rt.db.session() as db:
        search.catch_up(db)
        if db.get_bind().dialect.name == "sqlite":
            check = "INSERT INTO session_text_fts(session_text_fts, rank) VALUES (:c, 1)"
            db.execute(text(check), {"c": "integrity-check"})


def test_pages_read_tiers_of_matches_and_never_repeat_or_reorder(
    rt: Runtime, alice: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tiny tiers (3 texts) to see what a word in thousands of messages does."""
    made = [chat_in(rt, alice, f"s{n}", "a heron", "heron " * (n % 3 + 1)) for n in range(6)]
    monkeypatch.setattr(search, "WINDOW", 3)
    everything = found(rt, alice, "heron", limit=50)
    assert sorted(everything) == sorted(made)
    pages, cursor = [], None
    while True:
        results, cursor = session_service.search_sessions(
            rt, me(alice), "heron", limit=2, cursor=cursor
        )
        pages.append([r.row.id for r in results])
        if cursor is None:
            break
    assert [s for page in pages for s in page] == everything
    assert all(len(page) == 2 for page in pages)

    monkeypatch.setattr(search, "MAX_TIERS", 2)  # 6 texts: the 3 newest sessions
    assert sorted(found(rt, alice, "heron", limit=50)) == sorted(made[3:])


def test_a_tier_spans_its_sessions_and_ranks_only_within_them(
    rt: Runtime, alice: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tier ends once it spans TIER_SESSIONS sessions (2 here), however many texts the
    window would still take: a strong older match waits for the next tier."""
    strong = chat_in(rt, alice, "Egret", "an egret, egret, egret")
    weak = [chat_in(rt, alice, f"w{n}", f"{'long words ' * 40} then an egret") for n in range(3)]
    assert found(rt, alice, "egret")[0] == strong
    monkeypatch.setattr(search, "TIER_SESSIONS", 2)
    first, cursor = session_service.search_sessions(rt, me(alice), "egret", limit=2)
    assert sorted(r.row.id for r in first) == sorted(weak[1:])  # the two newest, one tier
    rest, cursor = session_service.search_sessions(rt, me(alice), "egret", cursor=cursor)
    assert [r.row.id for r in rest] == [strong, weak[0]]  # the next tier, ranked
    assert cursor is None


def test_a_tier_is_filtered_a_page_at_a_time_and_finds_what_filtering_it_whole_finds(
    rt: Runtime, alice: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A filter that refuses every other session (as an archive or folder filter would): a
    page's hits are the first of all the tier's, and fewer sessions are filtered for it."""
    monkeypatch.setattr(search, "SLACK", 1)
    made = [chat_in(rt, alice, f"s{n}", "heron " * (n + 1)) for n in range(12)]
    shown = set(made[1::2])
    asked: list[str] = []

    def keep(ids: list[str]) -> set[str]:
        asked.extend(ids)
        return {session_id for session_id in ids if session_id in shown}

    terms = search.parse_query("heron")
    with rt.db.session() as db:
        if search.behind(db):
            search.catch_up(db)
        everything, more = search.search(db, alice.user_id, terms, wanted=100, keep=keep)
        asked.clear()
        page, more_page = search.search(db, alice.user_id, terms, wanted=3, keep=keep)
    ranked = [hit.session_id for hit in everything]
    assert sorted(ranked) == sorted(shown)
    assert not more
    assert [hit.session_id for hit in page] == ranked[:3]
    assert more_page
    assert len(asked) < len(made)


@pytest.mark.parametrize(
    ("query", "terms"),
    [
        ("Parser  refactor", [("parser", True), ("refactor", True)]),
        ("pars* pars*", [("pars", True)]),
        ('"quoted" AND NOT -x', [("quoted", False), ("and", True), ("not", True), ("x", False)]),
        ('"two words', [("two", False), ("words", False)]),  # an unclosed quote runs to the end
        (
            "snake_case 3.5 v2",
            [("snake", True), ("case", True), ("3", False), ("5", False), ("v2", False)],
        ),
        (
            "sandwiches deployed running boxes",
            [("sandwich", True), ("deploy", True), ("run", True), ("box", True)],
        ),
        (
            "class status this string bus",
            [("class", True), ("status", True), ("this", True), ("string", True), ("bus", True)],
        ),  # nothing stripped
        ("%%%", []),
    ],
)
def test_queries_are_words_never_syntax(query: str, terms: list[tuple[str, bool]]) -> None:
    assert [(t.word, t.prefix) for t in search.parse_query(query)] == terms


@pytest.mark.parametrize(
    ("query", "body", "highlights"),
    [
        ('"heron"', "Heron, herons, a HERON.", [[0, 5], [17, 22]]),
        ("heron", "Heron, herons, a HERON.", [[0, 5], [7, 13], [17, 22]]),
        ('"heron"', "xheron heron_ _heron éheron 1heron\nheron", [[7, 12], [15, 20], [35, 40]]),
        ("her*", "a heron, Hermes; other", [[2, 7], [9, 15]]),
        ('"heron"', "a heron, herons", [[2, 7]]),
        ("herons", "a heron, herons, theron", [[2, 7], [9, 15]]),
        ("stories", "one story, two stories, a storm", [[4, 9], [15, 22]]),
        ('"dog cat"', "dogcat cat-dog", [[7, 10], [11, 14]]),
    ],
)
def test_a_highlight_is_a_whole_word_or_a_prefix(
    query: str, body: str, highlights: list[list[int]]
) -> None:
    """Not inside a longer word: no letter or digit just before or (whole words) after; an
    underscore is not a letter."""
    assert search.snippet(body, search.parse_query(query))["highlights"] == highlights
