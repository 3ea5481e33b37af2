"""Cost of the memory safety filter on one write to a typical MEMORY.md.

    .venv/bin/python bench/bench_safety_filter.py [--runs 2000]

Every automated memory write runs the filter on the new entry and on the whole file
(`shared.safety.check_entries`: the entry, the entries glued, their token-like parts, and
entries left open with the next). The file here is a typical MEMORY.md near its cap (about
2,100 characters in 25 entries: commands, conventions, versions, URLs, a SHA, a UUID, a
French and a German note) and the write adds one more entry. The script prints the median
and p99 microseconds per check for: the new entry alone (`check_text`, what a write cost
before the whole-file check), and the whole write (`check_entries`), for the file in ASCII and
with accents and curly quotes (non-ASCII text goes through the Unicode folding). Run on a
tree from before the whole-file check, "the whole write" is what a write cost then: each new
entry alone. Target: the median whole write is under 1 ms.
"""

from __future__ import annotations

import argparse
import sys
import time

from _common import percentile, verdict

from shared.safety.checks import Verdict, check_text

try:
    from shared.safety.checks import check_entries
except ImportError:  # a tree from before the whole-file check: each new entry alone

    def check_entries(entries: list[str], before: list[str] = ()) -> Verdict:  # type: ignore[misc]
        for entry in entries:
            if entry not in before:
                found = check_text(entry)
                if not found.allowed:
                    return found
        return Verdict(True)


TARGET_US = 1000.0

ENTRIES = [
    "This project uses pnpm, not npm; run the web tests with `pnpm test` in api/web.",
    "Run the Python tests with `uv run pytest -q -p no:cacheprovider`.",
    "Lint with `ruff check` and `ruff format`, then `mypy` on the whole project.",
    "The deploy target is the staging cluster; production deploys need a second reviewer.",
    "Postgres 16 on port 5432; Redis 7 on 6379, database 0 for the app and 1 for Celery.",
    "Commit 9fceb02d0ae598e95dc970b74767f19372d61af8 introduced the flaky index rebuild test.",
    "Session ids look like 123e4567-e89b-12d3-a456-426614174000.",
    "Migrations live in shared/db/migrations/versions and are numbered 0001, 0002, ...",
    "The API docs are at https://docs.example.com/eonyx/api/v1 (OpenAPI at /openapi.json).",
    "Alice owns the web client; Bob owns the Celery workers and the sweeps.",
    "Prefer small commits that name the issue number in the message.",
    "The CI image is python:3.12-slim with Node 22 for the web lint.",
    "Numpy is pinned to 1.26.4 because of the old wheels on the build host.",
    "Use the `secrets` module for tokens; never log them.",
    "The memory cap is MEMORY_CHAR_LIMIT=2200 characters.",
    "Docker images are tagged eonyx:<version> and pushed by the release job.",
    "The health check is GET /healthz and returns the git commit and uptime.",
    "Backups run at 03:30 UTC; restore drills every quarter.",
    "Sort listings by updated_at descending, pinned sessions first.",
    "The password field must be hashed with argon2id before it reaches the database.",
    "Le mot de passe des comptes de test est changé chaque semaine.",
    "Das Passwort wird nie ins Repository geschrieben.",
    "Colors: primary #1e90ff, background #0b0c10.",
    "The tokenizer counts about 4 characters per token for English text.",
]
NEW_ENTRY = "Max tokens for the summary call is 1024; the context window is 128000."
ACCENTED = [e.replace("e", "\u00e9").replace("'", "\u2019") for e in ENTRIES]


def timed(check: object, runs: int) -> list[int]:
    assert callable(check)
    for _ in range(20):
        check()
    samples = []
    for _ in range(runs):
        started = time.perf_counter_ns()
        check()
        samples.append(time.perf_counter_ns() - started)
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    args = parser.parse_args()
    size = len("".join(f"- {e}\n" for e in [*ENTRIES, NEW_ENTRY]))
    print("== bench_safety_filter  (one memory write)")
    print(f"   MEMORY.md of {len(ENTRIES) + 1} entries, {size:,} characters; {args.runs} runs")
    rows = []
    for label, entries in (("ascii", ENTRIES), ("accented", ACCENTED)):
        after = [*entries, NEW_ENTRY]
        allowed = check_entries(after, entries).allowed
        for what, check in (
            ("the new entry alone", lambda: check_text(NEW_ENTRY)),
            ("the whole write", lambda after=after, entries=entries: check_entries(after, entries)),
        ):
            samples = timed(check, args.runs)
            rows.append(
                (label, what, percentile(samples, 50) / 1000, percentile(samples, 99) / 1000)
            )
        if not allowed:
            print(f"   the {label} file was refused")
            return 1
    for label, what, p50, p99 in rows:
        print(f"   {label:9} {what:20} median {p50:8.1f} us   p99 {p99:8.1f} us")
    worst = max(p50 for _, what, p50, _ in rows if what == "the whole write")
    return verdict([(f"median whole write < {TARGET_US:.0f} us ({worst:.1f})", worst < TARGET_US)])


if __name__ == "__main__":
    sys.exit(main())
