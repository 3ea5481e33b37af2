"""Model calls and prompt tokens spent on the user profile (USER.md) per 100 user
turns: background extraction every 4 turns against extraction on every turn, in one run.

    .venv/bin/python bench/bench_memory.py [--turns 100] [--every 4] [--sessions 12,9,14,...]

Two apps (api.create_app, Flask test client, token auth) run side by side, each with its own
temporary DATA_DIR and SQLite database, USER_MEMORY_EXTRACTION=true and
USER_MEMORY_EXTRACTION_EVERY_N_TURNS=4 in one, =1 in the other (--every and --baseline change
them). Both get the same --turns user messages (default 100), turn by turn, interleaved: short
chat-like questions, and now and then a preference ("Please answer in German from now on.",
"I prefer bullet points ...", "Actually, English is fine again."). The messages are spread over
sessions of the lengths --sessions gives (cycled), because a session's prompt shows the
profile frozen when the session started: what extraction learns shows from the next session.

The model is the fake OpenAI-compatible server of tests/fake_llm.py (one per app). It answers
chat turns with a short sentence and extraction requests (recognised by their system message,
shared.extraction.INSTRUCTIONS) with the WHOLE reconciled profile as {"entries": [...]}: it
reads the current profile and the conversation from the request and applies, in order, each
preference statement it finds there (a newer one on the same subject replaces the older; a
reversal drops it). It only sees what the request carries, so a statement that no extraction
request contained never reaches USER.md.

The app's job queue is replaced by a recorder; after every turn each job it received runs as the
Celery task would (workers/tasks.py: shared.memory.extraction.extract_user_profile(rt, user_id,
session_id, upto_turn)), in order, before the next turn; when a session ends, the beat's sweep
runs as it would once the session has been quiet for extraction.IDLE_AFTER (its last turns,
fewer than N, are extracted too). Counted from the fake's request log:
chat calls, extraction calls, extraction prompt tokens (shared.compaction.estimate_tokens over
the request's messages, and the prompt_tokens the fake reports back, which is
len(json.dumps(messages)) // 4 + 1), extraction completion tokens, and in every chat request
the <user-profile> and <agent-memory> blocks of the system prompt (estimate_tokens of each
block, tags included). Figures are per 100 user turns; the ratio column is baseline / N.

Targets (correctness, not speed): every job ran and made one model call (one per N answered
user turns of each session, plus one for a quiet session's remaining turns), and both runs
end with the same USER.md, the one that has one line per preference still in force after
all the statements.
"""

from __future__ import annotations

import json
import re
import sys
import time
import zlib
from collections import Counter
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from _common import ROOT, base_parser, bench_account, print_table, verdict, workspace

from api.app import create_app
from api.context import runtime_of
from shared.chat.compaction import estimate_tokens
from shared.chat.prompt import AGENT_MEMORY_TAG, USER_PROFILE_TAG
from shared.core import job_names
from shared.core.settings import load_settings
from shared.memory import extraction
from shared.memory.extraction import INSTRUCTIONS, extract_user_profile, sweep_extraction
from shared.memory.files import USER_PROFILE
from workers.queue import celery_jobs

sys.path.insert(0, str(ROOT))  # tests/ is not installed; _common put the repo root first
from tests.fake_llm import FakeLLM, RecordedRequest, Reply, text

WINDOW = 128_000
PER = 100  # figures are per this many user turns
SESSIONS = "12,9,14,7,16,10,11,8,13"  # 100 turns; cycled when --turns is larger

# The preference statements, in order, at their turn (of 100; scaled for other --turns), with
# what the fake's reconciliation does with them: (subject, entry), entry None = drop it.
PREFERENCES: list[tuple[int, str, str, str | None]] = [
    (2, "Please answer in German from now on.", "language", "Answer in German"),
    (11, "I prefer bullet points over long paragraphs.", "format", "Prefers bullet points"),
    (19, "Keep your answers short, two or three sentences.", "length", "Keep answers short"),
    (30, "Actually, English is fine again.", "language", None),
    (41, "Please don't use emojis.", "emoji", "No emojis"),
    (52, "When you show Python, use type hints.", "code", "Use type hints in Python examples"),
    (63, "Actually, longer explanations are fine when the topic is tricky.", "length",
     "Longer explanations are fine for tricky topics"),
    (74, "Use metric units, please.", "units", "Use metric units"),
    (85, "Give me the command first, then the explanation.", "order",
     "Command first, then the explanation"),
]  # fmt: skip

QUESTIONS = (
    "How do I rename a local git branch?",
    "And the remote one?",
    "What's the difference between a list and a tuple in Python?",
    "Why does my pytest fixture run twice?",
    "Can you explain what a Redis TTL does?",
    "SQLite or Postgres for a small internal tool?",
    "What does HTTP 409 mean?",
    "thanks!",
    "ok, makes sense",
    "How do I undo the last commit but keep the changes?",
    "What's a good name for a function that merges two configs?",
    "Is it safe to run alembic upgrade twice?",
    "How long should a cache entry live for a user profile?",
    "Can you summarize what we just decided?",
    "What does fsync actually guarantee?",
    "Why is my Docker image 2 GB?",
    "How do I read a CSV with a semicolon separator in pandas?",
    "What's the cron syntax for every weekday at 7?",
    "Convert 5 miles to km",
    "How do I profile a slow Flask endpoint?",
    "What is a keyset pagination query?",
    "Should I pin my dependencies?",
    "Explain celery retries in one paragraph.",
    "What's the quickest way to find large files on Linux?",
    "How do I write a regex for an ISO date?",
    "Does gunicorn's gthread worker share memory between threads?",
    "What's the difference between 401 and 403?",
    "Can you draft a short commit message for a typo fix?",
    "How many tokens is a page of text, roughly?",
    "good, next question",
)
ANSWERS = (
    "Short version: `git branch -m old new`, then push the new name and delete the old one.",
    "It depends on the load; for a small team the simpler option is usually enough.",
    "Yes, that works. The main thing to watch is the error path.",
    "Here is the gist: do it once at startup and reuse the result.",
    "Roughly: the first is mutable, the second is not, so only the second can be a dict key.",
    "Glad it helped. Anything else?",
    "Use the built-in option for that; a custom wrapper adds little.",
    "Check the logs first: the cause is usually a timeout on the first request.",
)
EXTRACTION_HEAD = INSTRUCTIONS.split("\n", 1)[0]
SUBJECT_OF = {entry: subject for _, _, subject, entry in PREFERENCES if entry}
STATEMENTS = {message: (subject, entry) for _, message, subject, entry in PREFERENCES}
BLOCK = re.compile(rf"<({USER_PROFILE_TAG}|{AGENT_MEMORY_TAG})>\n.*?\n</\1>", re.DOTALL)


# -- the fake model's side ---------------------------------------------------------------------


def reconcile(entries: list[str], said: list[str]) -> list[str]:
    """What a good model returns: the current entries with each statement applied in order."""
    by_subject: dict[str, str | None] = {SUBJECT_OF.get(e, e): e for e in entries}
    for line in said:
        if line in STATEMENTS:
            subject, entry = STATEMENTS[line]
            by_subject[subject] = entry  # replaces in place, or adds at the end
    return [entry for entry in by_subject.values() if entry]


def between(value: str, start: str, end: str) -> str:
    return value.split(start, 1)[1].split(end, 1)[0] if start in value else ""


def is_extraction(messages: list[dict[str, Any]]) -> bool:
    return bool(messages) and str(messages[0].get("content", "")).startswith(EXTRACTION_HEAD)


def answer(request: RecordedRequest) -> Reply:
    messages = request.messages
    if not is_extraction(messages):
        last = next((m for m in reversed(messages) if m.get("role") == "user"), {})
        return text(ANSWERS[zlib.crc32(str(last.get("content")).encode()) % len(ANSWERS)])
    prompt = str(messages[1]["content"])
    profile = between(prompt, "<profile>\n", "\n</profile>")
    entries = [] if profile == "(empty)" else [line[2:] for line in profile.splitlines()]
    conversation = between(prompt, "<conversation>\n", "\n</conversation>")
    said = [p[len("User: ") :] for p in conversation.split("\n\n") if p.startswith("User: ")]
    return text(json.dumps({"entries": reconcile(entries, said)}))


# -- the app's side ----------------------------------------------------------------------------


class RecordingJobs:
    """The app's job queue: keeps what was sent; `drain` hands it over to be run."""

    def __init__(self) -> None:
        self.pending: list[tuple[Any, ...]] = []
        self.sent = 0

    def enqueue(self, job: str, *args: object) -> str:
        self.pending.append((job, *args))
        self.sent += 1
        return f"bench-job-{self.sent}"

    def status(self, job_id: str) -> dict[str, object]:
        return {"id": job_id, "state": "SUCCESS", "result": None, "error": None}

    def drain(self) -> list[tuple[Any, ...]]:
        jobs, self.pending = self.pending, []
        return jobs


@dataclass
class Run:
    every: int
    fake: FakeLLM
    app: Any
    headers: dict[str, str]
    jobs: RecordingJobs
    usages: list[tuple[str, dict[str, Any] | None]] = field(default_factory=list)
    outcomes: Counter[str] = field(default_factory=Counter)
    other_jobs: Counter[str] = field(default_factory=Counter)
    expected_jobs: int = 0
    seconds: float = 0.0
    session: str = ""
    user_id: str = ""

    @property
    def rt(self) -> Any:
        return runtime_of(self.app)


def start_run(ws: Any, every: int) -> Run:
    fake = FakeLLM().start()
    fake.set_default(answer)
    env = {
        "DATA_DIR": str(ws.data_dir),
        "DATABASE_URL": ws.database_url,
        "HOME": str(ws.root),
        "EONYX_LLM_BASE_URL": fake.base_url,
        "EONYX_LLM_MODEL": "fake-model",
        "EONYX_LLM_CONTEXT_WINDOW": str(WINDOW),
        "LLM_MAX_RETRIES": "0",
        "USER_MEMORY_EXTRACTION": "true",
        "USER_MEMORY_EXTRACTION_EVERY_N_TURNS": str(every),
    }
    settings = load_settings(env)
    app = create_app(settings, jobs_queue=celery_jobs(settings))
    rt = runtime_of(app)
    jobs = RecordingJobs()
    rt.jobs = jobs
    principal, token = bench_account(rt)
    user_id = principal.user_id
    run = Run(every, fake, app, {"Authorization": f"Bearer {token}"}, jobs, user_id=user_id)
    complete = rt.llm.complete

    def counted(offering: Any, messages: list[dict[str, Any]], **options: Any) -> Any:
        completion = complete(offering, messages, **options)
        kind = "extraction" if is_extraction(messages) else "chat"
        run.usages.append((kind, completion.usage))
        return completion

    rt.llm.complete = counted  # this app's client only
    return run


def new_session(run: Run) -> None:
    if run.session:
        session_went_quiet(run)
    client = run.app.test_client()
    response = client.post("/api/v1/sessions", json={}, headers=run.headers)
    if response.status_code not in (200, 201):
        raise SystemExit(f"creating a session answered {response.status_code}")
    run.session = response.get_json()["id"]


def turn(run: Run, content: str) -> None:
    client = run.app.test_client()
    response = client.post(
        f"/api/v1/sessions/{run.session}/turns", json={"content": content}, headers=run.headers
    )
    if response.status_code != 200:
        raise SystemExit(f"turn answered {response.status_code}: {response.get_data()[:300]!r}")
    run_jobs(run)


def session_went_quiet(run: Run) -> None:
    """What the beat's sweep does once a session has been quiet for extraction.IDLE_AFTER:
    its last turns (fewer than N) are extracted too."""
    idle_after, extraction.IDLE_AFTER = extraction.IDLE_AFTER, timedelta(0)
    try:
        sweep_extraction(run.rt, run.jobs)
    finally:
        extraction.IDLE_AFTER = idle_after
    run_jobs(run)


def run_jobs(run: Run) -> None:
    for job, *args in run.jobs.drain():  # what the worker would run next, in order
        if job != job_names.EXTRACT_MEMORY:
            run.other_jobs[job] += 1
            continue
        outcome = extract_user_profile(run.rt, *args)
        run.outcomes[outcome.status] += 1


# -- the script --------------------------------------------------------------------------------


def plan(turns: int, lengths: list[int], rng_seed: int = 11) -> list[tuple[bool, str]]:
    """(starts a new session, message) for each turn."""
    at = {max(1, round(t * turns / PER)): message for t, message, _, _ in PREFERENCES}
    starts, total, i = set(), 0, 0
    while total < turns:
        starts.add(total + 1)
        total += lengths[i % len(lengths)]
        i += 1
    out = []
    for n in range(1, turns + 1):
        filler = QUESTIONS[(n * 7 + rng_seed) % len(QUESTIONS)]
        out.append((n in starts, at.get(n, filler)))
    return out


def session_lengths(script: list[tuple[bool, str]]) -> list[int]:
    lengths: list[int] = []
    for starts, _ in script:
        if starts:
            lengths.append(0)
        lengths[-1] += 1
    return lengths


@dataclass
class Figures:
    chat_calls: int
    extraction_calls: int
    extraction_est: int
    extraction_reported: int
    extraction_completion: int
    chat_est: int
    profile_block: int
    memory_block: int
    chats_with_profile: int
    tool_schemas: int
    tool_names: list[str]


def figures(run: Run) -> Figures:
    chat = [r for r in run.fake.completions if not is_extraction(r.messages)]
    extraction = [r for r in run.fake.completions if is_extraction(r.messages)]
    profile_block = memory_block = with_profile = 0
    for request in chat:
        system = str(request.messages[0].get("content", ""))
        for match in BLOCK.finditer(system):
            tokens = estimate_tokens(match.group(0))
            if match.group(1) == USER_PROFILE_TAG:
                profile_block += tokens
                with_profile += 1
            else:
                memory_block += tokens
    reported = [u or {} for kind, u in run.usages if kind == "extraction"]
    return Figures(
        chat_calls=len(chat),
        extraction_calls=len(extraction),
        extraction_est=sum(estimate_tokens(r.messages) for r in extraction),
        extraction_reported=sum(int(u.get("prompt_tokens", 0)) for u in reported),
        extraction_completion=sum(int(u.get("completion_tokens", 0)) for u in reported),
        chat_est=sum(estimate_tokens(r.messages) for r in chat),
        profile_block=profile_block,
        memory_block=memory_block,
        chats_with_profile=with_profile,
        tool_schemas=sum(estimate_tokens(json.dumps(r.body.get("tools") or [])) for r in chat),
        tool_names=sorted({t["function"]["name"] for r in chat for t in r.body.get("tools") or []}),
    )


def main() -> int:
    parser = base_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=PER, help="user turns per run")
    parser.add_argument("--every", type=int, default=4, help="N of the compared run")
    parser.add_argument("--baseline", type=int, default=1, help="N of the baseline run")
    parser.add_argument(
        "--sessions", default=SESSIONS, help="session lengths in turns, comma-separated, cycled"
    )
    args = parser.parse_args()
    lengths = [int(x) for x in args.sessions.split(",") if x.strip()]
    if not lengths or min(lengths) < 1 or min(args.every, args.baseline, args.turns) < 1:
        parser.error("--turns, --every, --baseline and session lengths must be positive")
    script = plan(args.turns, lengths)
    everies = [args.every, args.baseline]

    runs: list[Run] = []
    with (
        workspace(args.database_url, keep=args.keep) as ws_a,
        workspace(args.database_url, keep=args.keep) as ws_b,
    ):
        try:
            for ws, every in zip((ws_a, ws_b), everies, strict=True):
                runs.append(start_run(ws, every))
            print(
                f"== bench_memory  ({ws_a.backend}, {args.turns} user turns in "
                f"{len(session_lengths(script))} sessions, extraction every "
                f"{args.every} vs every {args.baseline} turn(s))"
            )
            for run in runs:
                run.expected_jobs = sum(-(-n // run.every) for n in session_lengths(script))
            for i, (starts, content) in enumerate(script):
                for run in runs if i % 2 == 0 else runs[::-1]:  # interleaved
                    started = time.perf_counter()
                    if starts:
                        new_session(run)
                    turn(run, content)
                    run.seconds += time.perf_counter() - started
            for run in runs:
                session_went_quiet(run)  # the last session ends too
            results = [figures(run) for run in runs]
            profiles = [run.rt.memory.read(USER_PROFILE, run.user_id).content for run in runs]
            errors = [e for run in runs for e in run.fake.errors]
        finally:
            for run in runs:
                run.rt.close()
                run.fake.stop()
    if errors:
        print("FAIL: the fake model crashed:\n" + "\n".join(errors))
        return 1
    return report(args, script, runs, results, profiles)


def report(
    args: Any, script: list[tuple[bool, str]], runs: list[Run], results: list[Figures],
    profiles: list[str],
) -> int:  # fmt: skip
    scale = PER / args.turns
    a, b = results

    def per(value: float) -> str:
        value *= scale
        return f"{value:,.0f}" if value >= 10 or value == int(value) else f"{value:,.1f}"

    def ratio(x: float, y: float) -> str:
        return f"{y / x:.2f}x" if x else ("-" if not y else "inf")

    def row(label: str, x: float, y: float) -> list[str]:
        return [label, per(x), per(y), ratio(x, y)]

    memory_a = a.extraction_est + a.profile_block + a.memory_block
    memory_b = b.extraction_est + b.profile_block + b.memory_block
    rows = [
        row("chat model calls", a.chat_calls, b.chat_calls),
        row("extraction model calls", a.extraction_calls, b.extraction_calls),
        row("extraction prompt tokens (estimate_tokens)", a.extraction_est, b.extraction_est),
        row("extraction prompt tokens (fake's usage)", a.extraction_reported,
            b.extraction_reported),
        row("extraction completion tokens (fake's usage)", a.extraction_completion,
            b.extraction_completion),
        row("  per extraction call, prompt (estimate)",
            a.extraction_est / max(a.extraction_calls, 1) / scale,
            b.extraction_est / max(b.extraction_calls, 1) / scale),
        row("<user-profile> tokens in chat prompts", a.profile_block, b.profile_block),
        row("<agent-memory> tokens in chat prompts", a.memory_block, b.memory_block),
        row("  chat calls whose prompt has a profile", a.chats_with_profile,
            b.chats_with_profile),
        row("memory prompt tokens (extraction + blocks)", memory_a, memory_b),
        row("all chat prompt tokens (estimate_tokens)", a.chat_est, b.chat_est),
        row("all model calls", a.chat_calls + a.extraction_calls,
            b.chat_calls + b.extraction_calls),
        row("all prompt tokens (estimate_tokens)", a.chat_est + a.extraction_est,
            b.chat_est + b.extraction_est),
        row(f"tool schemas in chat calls ({', '.join(a.tool_names) or 'none'})",
            a.tool_schemas, b.tool_schemas),
    ]  # fmt: skip
    print()
    heads = [f"per {PER} user turns", f"N={runs[0].every}", f"N={runs[1].every}"]
    print_table([*heads, f"N={runs[1].every} / N={runs[0].every}"], rows)
    for run, fig in zip(runs, results, strict=True):
        share = 100 * (fig.profile_block + fig.memory_block) / max(fig.chat_est, 1)
        total = fig.chat_est + fig.extraction_est
        memory = fig.extraction_est + fig.profile_block + fig.memory_block
        print(
            f"   N={run.every}: memory blocks are {share:.1f}% of chat prompt tokens; memory is "
            f"{100 * memory / max(total, 1):.1f}% of all prompt tokens; extraction outcomes "
            f"{dict(run.outcomes)}; "
            f"{run.seconds:.1f} s"
        )
    print(
        "   estimate_tokens counts message text only (~4 chars/token); the fake's prompt_tokens "
        "count the JSON of the messages.\n   Tool schemas: estimate_tokens of the JSON of the "
        "`tools` of each chat request; they are in none of the other rows."
    )

    expected = "".join(f"- {e}\n" for e in reconcile([], [m for _, m in script]))
    checks: list[tuple[str, bool]] = []
    for run, profile, fig in zip(runs, profiles, results, strict=True):
        print()
        print(f"-- final USER.md, N={run.every} ({len(profile.splitlines())} lines)")
        print(profile.rstrip() or "(empty)")
        checks.append(
            (
                f"N={run.every}: every job ran, one model call each "
                f"({fig.extraction_calls} calls, {run.expected_jobs} expected"
                f"{', other jobs: ' + str(dict(run.other_jobs)) if run.other_jobs else ''})",
                fig.extraction_calls == run.expected_jobs == sum(run.outcomes.values())
                and not run.other_jobs,
            )
        )
    print()
    print(
        f"-- expected USER.md (every statement applied in order, {expected.count(chr(10))} lines)"
    )
    print(expected.rstrip())
    print()
    checks.append(("both runs end with the same USER.md", profiles[0] == profiles[1]))
    for run, profile in zip(runs, profiles, strict=True):
        checks.append(
            (f"N={run.every}: USER.md has one line per preference in force", profile == expected)
        )
    return verdict(checks)


if __name__ == "__main__":
    sys.exit(main())
