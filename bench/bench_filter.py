"""Throughput of the memory safety filter (shared.safety.check_text) on chat-sized text.

    .venv/bin/python bench/bench_filter.py [--texts 2000] [--runs 7] [--secret-share 0.1]

The corpus is --texts strings of about 1 KB (0.8-1.6 KB) built from chat-like sentences
(preferences, code, commands, URLs, versions, dates, prices, people's names, health and
money as topics of the work), with --secret-share of them carrying one secret or piece of
sensitive personal data from the test corpus (tests/shared/safety_corpus.py) at a random
place. Before timing, the script checks every verdict: clean texts allowed, the others
blocked.

Each run checks the whole corpus once (mixed order, after one warm-up pass); the table shows
the median of --runs runs for the mixed corpus and for its clean and secret-bearing parts,
as strings/s, MB/s and mean microseconds per string, plus p50/p99 of single calls.

Target: the mean over the mixed corpus is under 1 ms per string ("well under a millisecond"
for a chat-sized text); the figure is usually far below it.
"""

from __future__ import annotations

import argparse
import platform
import random
import sys
import time

from _common import median, percentile, print_table, verdict

from shared.safety.checks import check_text
from tests.shared.safety_corpus import BLOCK

TARGET_MEAN_US = 1000.0

SENTENCES = (
    "I prefer concise answers with a short summary at the top.",
    "Answer in German unless I write in English.",
    "This project uses pnpm, not npm, and the tests run with `uv run pytest -q`.",
    "The deploy failed again on the staging cluster because the migration timed out.",
    "Can you check why `SessionStore.append` takes 12 ms on the CI runner?",
    "Alice reviewed the PR and asked for a test of the compaction threshold at 80%.",
    "Bob said the Redis lock TTL should be 30 seconds, not 300.",
    "We pinned numpy to 1.26.4 and Python to 3.11.7 in the Dockerfile.",
    "The API returns 409 when the version header is stale; retry with the new ETag.",
    "Open https://docs.python.org/3/library/re.html#re.Pattern.search for the pos argument.",
    "The service listens on port 8080 and Postgres on 5432.",
    "Commit 3f2a9c1 fixed the flaky index rebuild test.",
    "Session ids look like 123e4567-e89b-12d3-a456-426614174000.",
    "The Pro plan costs $20/month and the team plan €18 per seat.",
    "Our budget for cloud spend is $5,000 a month, mostly GPU instances.",
    "Run `git checkout 9fceb02d0ae598e95dc970b74767f19372d61af8` to get the old behaviour.",
    "The password field must be hashed with argon2id before it reaches the database.",
    "Call get_api_key() once at startup and keep it in the settings object.",
    "SECRET_KEY_SETTING_NAME is read from the environment, never from the repo.",
    "The diabetes risk model needs a calibration plot before we show it to the clinic.",
    "Patients table has a diagnosis column with ICD-10 codes.",
    "The salary field is a Decimal with two places.",
    "Meeting moved to 2025-03-14 at 10:30 CET.",
    "I like tabs in Go code and four spaces in Python.",
    "Use the `secrets` module for tokens and never log them.",
    "My laptop runs macOS 14.4 with 32 GB of RAM.",
    "The config lives in ~/.config/eonyx/config.toml on Linux.",
    "She wants the weekly report as a table with p50 and p99 columns.",
    "He is on call this week, so ping him for the database alerts.",
    "Colors: primary #1e90ff, background #0b0c10, text #e6e6e6.",
    "The CSV export has 14 columns and about 250,000 rows.",
    "Please keep commit messages under 72 characters.",
    "The worker retries with exponential backoff up to 5 times.",
    "Stripe charges 2.9% + 30 cents per successful card charge.",
    "The tokenizer counts about 4 characters per token for English text.",
    "We moved the cron job from 02:00 to 03:30 UTC to avoid the backup window.",
    "The JWT is validated with the public key from the JWKS endpoint.",
    "I usually work from Berlin, so schedule calls after 9:00 CET.",
    "Build the Docker image with `docker build -t eonyx:0.1.0 .` and push it.",
    "The user prefers dark mode, vim keybindings and short code comments.",
    "Max tokens for the summary call is 1024; the context window is 128000.",
    "The health check endpoint returns 200 with the git commit and uptime.",
    "Sort the listing by updated_at descending, pinned sessions first.",
    "Alembic revision 0007 adds the model_roles table.",
    "Let me know if the memory file gets close to 2,200 characters.",
)


def make_text(rng: random.Random, secret: str | None) -> str:
    target = rng.randint(800, 1600)
    parts: list[str] = []
    while sum(len(p) + 1 for p in parts) < target:
        parts.append(rng.choice(SENTENCES))
    if secret is not None:
        parts.insert(rng.randint(0, len(parts)), secret)
    return " ".join(parts)


def build_corpus(count: int, share: float, seed: int) -> tuple[list[str], list[bool]]:
    rng = random.Random(seed)
    texts: list[str] = []
    blocked: list[bool] = []
    for _ in range(count):
        if rng.random() < share:
            texts.append(make_text(rng, rng.choice(BLOCK).text))
            blocked.append(True)
        else:
            texts.append(make_text(rng, None))
            blocked.append(False)
    return texts, blocked


def run(texts: list[str]) -> float:
    started = time.perf_counter_ns()
    for text in texts:
        check_text(text)
    return (time.perf_counter_ns() - started) / 1e9


def row(label: str, texts: list[str], runs: int) -> list[str]:
    seconds = median([run(texts) for _ in range(runs)])
    size = sum(len(t.encode()) for t in texts)
    singles: list[int] = []
    for text in texts:
        started = time.perf_counter_ns()
        check_text(text)
        singles.append(time.perf_counter_ns() - started)
    return [
        label,
        f"{len(texts)}",
        f"{size / len(texts) / 1024:.2f}",
        f"{len(texts) / seconds:,.0f}",
        f"{size / seconds / 1e6:.1f}",
        f"{seconds / len(texts) * 1e6:.1f}",
        f"{percentile(singles, 50) / 1000:.1f}",
        f"{percentile(singles, 99) / 1000:.1f}",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--secret-share", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    texts, blocked = build_corpus(args.texts, args.secret_share, args.seed)
    wrong = [
        i for i, (t, b) in enumerate(zip(texts, blocked, strict=True)) if check_text(t).allowed == b
    ]
    print("== bench_filter  (shared.safety.check_text)")
    print(
        f"   python {platform.python_version()}, {args.texts} texts, {args.runs} runs, "
        f"{sum(blocked)} with a secret"
    )
    if wrong:
        print(f"   {len(wrong)} wrong verdicts (first at text {wrong[0]})")
    run(texts)  # warm-up
    clean = [t for t, b in zip(texts, blocked, strict=True) if not b]
    dirty = [t for t, b in zip(texts, blocked, strict=True) if b]
    rows = [row("mixed", texts, args.runs), row("clean", clean, args.runs)]
    if dirty:
        rows.append(row("with a secret", dirty, args.runs))
    print_table(
        ["corpus", "texts", "KB/text", "strings/s", "MB/s", "mean us", "p50 us", "p99 us"],
        rows,
    )
    mean_us = float(rows[0][5])
    return verdict(
        [
            ("every verdict as expected", not wrong),
            (
                f"mean < {TARGET_MEAN_US:.0f} us per chat-sized string ({mean_us:.1f})",
                mean_us < TARGET_MEAN_US,
            ),
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
