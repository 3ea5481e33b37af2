"""Extraction: the background reconciliation of the user profile (USER.md).

With USER_MEMORY_EXTRACTION on (and the user profile on, and not in demo mode), every
USER_MEMORY_EXTRACTION_EVERY_N_TURNS user turns of a non-temporary session the turn enqueues
`eonyx.memory.extract(user_id, session_id, upto_turn)` and returns; nothing waits for it.

The job asks the `user_memory_extraction` model once, with bounded input (the current
entries and the user/assistant messages of the turns since the last run), for the WHOLE
reconciled user profile as JSON, and writes it through `MemoryStore.update` (lock, filter, cap,
backup, atomic replace). Progress is kept in the session file as a meta record
`{"extracted_turns": K}`: a retried or duplicated job for turns already done does nothing.

What a run leaves behind:
- the model's profile differs: USER.md rewritten, marker advanced (`saved`);
- the same entries (in any order), an empty list, unparsable output, or a profile the cap
  refuses: the file is untouched (byte for byte) and the marker advances (`unchanged` /
  `ignored`), so the same answer is not asked for again;
- new entries the safety filter flags are left out (never stored); the rest is saved;
- the model fails (error, timeout, no model configured) or USER.md changed while the model
  was thinking: nothing is written and the marker stays (`failed`), so the sweep retries.

The sweep (`sweep_extraction`, every 30 seconds with the likes' sweep) looks at the
non-temporary sessions the index shows updated in the last day and enqueues the job for any
whose answered user turns are at least N past the marker, once the last turn is LOST_AFTER
old and no job holds the session's extraction lock: a lost job costs a delay, never the
extraction. Running sessions keep their frozen snapshot; what is learned applies from the
next session.

How soon a job lost with its worker is redone: see shared/infra/lost_jobs.py (within about
50 s of the worker's death, while another worker lives).
"""

from __future__ import annotations

import logging
from datetime import timedelta

from shared.core import registry
from shared.core.errors import InvalidInput, NotFound
from shared.core.events import MemoryUpdated
from shared.core.job_names import EXTRACT_MEMORY, JobQueue
from shared.core.messages import Exchange, JobMessage, count_answered, exchanges, job_prompt
from shared.core.settings import Settings
from shared.files.session_state import meta_count
from shared.files.session_store import SessionState
from shared.infra import event_bus
from shared.infra.lost_jobs import JOB_LOCK_TTL, JOB_LOCK_WAIT, LOST_AFTER, job_running, resend
from shared.memory import background
from shared.memory.background import Outcome
from shared.memory.files import USER_PROFILE, MemoryRefused, StaleVersion, render_entries
from shared.memory.needs import MemoryRuntime
from shared.safety.checks import check_text
from shared.sessions import service as session_service
from shared.sessions.turn_hooks import EndedTurn

log = logging.getLogger(__name__)
MARKER = "extracted_turns"
# A session quiet this long has its last turns (fewer than N) extracted too, so the end of a
# conversation is never left out.
IDLE_AFTER = timedelta(minutes=30)

INSTRUCTIONS = """\
You maintain a user's preference profile: a short list of how this user likes to be helped \
(preferences, communication style, expectations, workflow habits).

You get the current profile and the latest turns of a conversation. Return the WHOLE \
reconciled profile:
- keep every entry that still holds;
- merge duplicates into one entry;
- when a newer explicit preference contradicts an older one, keep only the newer one;
- drop preferences the user reversed or that are outdated;
- add durable preferences the user stated or clearly showed.

Only preferences about how to help this user belong here: not facts about their work or the \
topics discussed, not one-off requests. Never include secrets, passwords, keys, contact \
details, identifiers, or health, financial or other sensitive personal data.
One short entry per preference, without bullets. Keep the whole profile under {limit} \
characters. If nothing needs to change, return the current entries as they are.

Answer with JSON only: {{"entries": ["...", "..."]}}"""


def extracted_turns(state: SessionState) -> int | None:
    """The session's user turns already reconciled into the profile (its MARKER), if any."""
    return meta_count(state, MARKER)


# -- when to run -------------------------------------------------------------------------------


def extraction_enabled(settings: Settings) -> bool:
    return (
        settings.user_memory_extraction and settings.user_profile_enabled and not settings.demo_mode
    )


def after_turn(rt: MemoryRuntime, ended: EndedTurn) -> None:
    """An answered turn may complete the N user messages that call for an extraction."""
    if ended.answered:
        maybe_enqueue_extraction(rt, ended.state)


def maybe_enqueue_extraction(rt: MemoryRuntime, state: SessionState) -> bool:
    """Called at the end of a successful turn: enqueue the job when the session's user
    messages reach a multiple of N. Only sends a job; a queue that fails is logged (the
    sweep catches up), never an error for the turn, whose answer is already saved."""
    switches = rt.live_settings.settings()
    if not extraction_enabled(switches) or state.temporary or rt.jobs is None:
        return False
    count = state.user_messages
    every = switches.user_memory_extraction_every_n_turns
    if count == 0 or count % every:
        return False
    return rt.hint(EXTRACT_MEMORY, state.user_id, state.id, count)


# -- the job -----------------------------------------------------------------------------------


def extraction_request(entries: list[str], turns: list[Exchange], limit: int) -> list[JobMessage]:
    profile = render_entries(entries).strip() or "(empty)"
    conversation = background.transcript(turns)
    return job_prompt(
        INSTRUCTIONS.format(limit=limit),
        f"Current profile (USER.md):\n<profile>\n{profile}\n</profile>\n\n"
        f"Latest conversation turns, oldest first:\n<conversation>\n{conversation}\n"
        "</conversation>",
    )


def parse_user_profile(content: str | None) -> list[str] | None:
    """The entries of `{"entries": [...]}`, each on one line; None if the answer is not that."""
    data = background.parse_json_answer(content)
    if not isinstance(data, dict) or not isinstance(data.get("entries"), list):
        return None
    entries: list[str] = []
    for item in data["entries"]:
        if not isinstance(item, str):
            return None
        text = " ".join(item.split())
        if text[:2] in ("- ", "* "):
            text = text[2:].strip()
        if text and text.casefold() not in {e.casefold() for e in entries}:
            entries.append(text)
    return entries


def extract_lock(session_id: str) -> str:
    return registry.EXTRACT_LOCK + session_id


def extract_user_profile(
    rt: MemoryRuntime, user_id: str, session_id: str, upto_turn: int
) -> Outcome:
    """Reconcile USER.md with the session's turns up to `upto_turn` (see the module doc)."""
    if not extraction_enabled(rt.live_settings.settings()):
        return Outcome("skipped", "extraction is off")
    with rt.locks.hold(
        extract_lock(session_id), wait=JOB_LOCK_WAIT, ttl=JOB_LOCK_TTL, keepalive=True
    ):
        try:
            state, _ = rt.store.load(user_id, session_id)
        except NotFound:
            return Outcome("skipped", "the session is gone")
        done = extracted_turns(state) or 0
        if state.temporary:
            return Outcome("skipped", "temporary chats never shape the user profile", done)
        turns = exchanges(state.messages)
        target = min(upto_turn, count_answered(turns))
        if target <= done:
            return Outcome("skipped", f"turns up to {done} are already done", done)
        outcome = _reconcile(rt, user_id, turns[done:target])
        if outcome.status == "failed":
            return Outcome(outcome.status, outcome.detail, done)  # the sweep retries
        session_service.append_meta(rt, user_id, session_id, {MARKER: target})
        return Outcome(outcome.status, outcome.detail, target)


def _reconcile(rt: MemoryRuntime, user_id: str, turns: list[Exchange]) -> Outcome:
    before = rt.memory.read(USER_PROFILE, user_id)
    request = extraction_request(before.entries, turns, before.limit)
    try:
        answer = background.ask_role(rt, "user_memory_extraction", request, user_id)
    except background.ModelFailed as exc:
        log.warning("user profile extraction failed for user %s: %s", user_id, exc.logged)
        return Outcome("failed", f"the model failed: {exc}")
    proposed = parse_user_profile(answer)
    if proposed is None:
        return Outcome("ignored", "the model's answer was not a JSON list of entries")
    flagged = [e for e in proposed if e not in before.entries and not check_text(e).allowed]
    entries = [e for e in proposed if e not in flagged]
    if not entries:
        return Outcome("ignored", "the model returned no entries; the user profile was kept")

    def change(current: list[str]) -> list[str]:
        if current != before.entries:  # written meanwhile: this answer is out of date
            raise StaleVersion("USER.md changed while the model was reconciling it")
        if sorted(e.casefold() for e in entries) == sorted(e.casefold() for e in current):
            return current  # the same lines in another order: not worth a rewrite
        return entries

    try:
        old, after = rt.memory.update(USER_PROFILE, user_id, change)
    except StaleVersion as exc:
        return Outcome("failed", exc.message)
    except (MemoryRefused, InvalidInput) as exc:  # over the cap, or the filter's last word
        return Outcome("ignored", f"not saved: {exc.message}")
    left_out = f"; left out {len(flagged)} the safety filter refused" if flagged else ""
    if after.version == old.version:
        return Outcome("unchanged", "the user profile already says all of it" + left_out)
    event_bus.publish(
        rt.redis,
        user_id,
        MemoryUpdated("USER.md", "reconciled", entries=len(entries)),
    )
    return Outcome("saved", f"USER.md now has {len(entries)} entries{left_out}")


# -- the sweep ---------------------------------------------------------------------------------


def sweep_extraction(rt: MemoryRuntime, jobs: JobQueue) -> int:
    """Enqueue the extraction a lost job left undone, and the last turns of sessions that went
    quiet before reaching the next multiple of N; returns how many jobs were sent."""
    switches = rt.live_settings.settings()
    if not extraction_enabled(switches):
        return 0
    every = switches.user_memory_extraction_every_n_turns
    now = rt.clock.now()
    quiet_since, lost_since = now - IDLE_AFTER, now - LOST_AFTER
    sent = 0
    for ids in background.recent_sessions(rt, min_messages=2):
        user_id, session_id = ids
        try:
            state, _ = rt.store.load(user_id, session_id)
        except (NotFound, InvalidInput):
            continue
        answered = count_answered(exchanges(state.messages))
        done = extracted_turns(state) or 0
        lost = answered >= done + every and state.updated_at <= lost_since
        due = lost or (answered > done and state.updated_at <= quiet_since)
        if state.temporary or not due or job_running(rt.locks, extract_lock(session_id)):
            continue
        if resend(rt.redis, jobs, f"{EXTRACT_MEMORY}:{session_id}", EXTRACT_MEMORY, *ids, answered):
            sent += 1
    return sent
