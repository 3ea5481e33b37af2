"""The long schemathesis run, by hand: every phase and check of tests/openapi_fuzz.py against
a served Eonyx on each backend, repeated with new seeds until the server has answered at
least --requests requests. Prints requests tried, 5xx and schema mismatches per backend.

    .venv/bin/python bench/fuzz_api.py                       # embedded and PostgreSQL
    .venv/bin/python bench/fuzz_api.py --backend embedded --requests 2000

Not a bench_*.py: `make bench` does not run it (it takes minutes per backend). It builds its
own DATA_DIR, SQLite file or private PostgreSQL schema, and embedded Redis, and removes them;
against the real services it flushes the Redis database given with --redis-url.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import redis
from _common import workspace  # also puts the project on sys.path

from shared.infra.embedded_redis import EmbeddedRedis
from tests.api.test_openapi_fuzz import fuzz_settings
from tests.fake_llm import FakeLLM
from tests.openapi_fuzz import SERVER_ERROR_TYPES, replay_known_cases, run_schemathesis, served


def fuzz_backend(
    name: str, database_url: str | None, redis_url: str | None, args: argparse.Namespace
) -> dict[str, object]:
    """Serve one backend and fuzz it until it answered `args.requests` requests."""
    failures: Counter[str] = Counter()
    lines: list[str] = []
    runs = 0
    started = time.monotonic()
    with workspace(database_url) as space, FakeLLM() as llm:
        embedded = None
        if redis_url is None:
            embedded = EmbeddedRedis(space.root / "redis")
            redis_url = embedded.start()
        else:
            redis.Redis.from_url(redis_url).flushdb()
        try:
            settings = fuzz_settings(space.data_dir, None, llm.base_url).with_changes(
                database_url=space.database_url, redis_url=redis_url
            )
            with served(settings) as target:
                ran, known = replay_known_cases(target)  # the Teams cases need the fake bot
                print(f"  {name}: {ran} known cases, {len(known)} not refused", flush=True)
                failures["KnownCase"] += len(known)
                lines += [f"known case: {line}" for line in known]
                while target.tally.requests < args.requests:
                    runs += 1
                    with tempfile.TemporaryDirectory() as report_dir:
                        outcome = run_schemathesis(
                            target,
                            llm.base_url,
                            Path(report_dir),
                            max_time=args.chunk_seconds,
                            seed=args.seed + runs,
                            workers=args.workers,
                            extra=tuple(args.schemathesis_args),
                        )
                    log = args.log_dir / f"{name.split()[0].lower()}-{runs}.txt"
                    log.write_text(outcome.output)
                    failures.update(outcome.failures)
                    lines += [line for line in outcome.failure_lines if line not in lines]
                    print(
                        f"  {name} run {runs} (seed {args.seed + runs}): "
                        f"{outcome.requests} requests so far, "
                        f"{sum(outcome.server_errors.values())} 5xx, "
                        f"{sum(failures.values())} failures",
                        flush=True,
                    )
                requests, server_errors = target.tally.requests, target.tally.server_errors
        finally:
            if embedded is not None:
                embedded.stop()
    # every failure but a 5xx is a mismatch between the document and the server; an `error`
    # is the fuzzer's own (it could not build or run a case), counted apart
    mismatches = sum(
        n for kind, n in failures.items() if kind not in SERVER_ERROR_TYPES and kind != "error"
    )
    return {
        "backend": name,
        "requests": requests,
        "server_errors": sum(server_errors.values()),
        "mismatches": mismatches,
        "fuzzer_errors": failures["error"],
        "runs": runs,
        "seconds": time.monotonic() - started,
        "details": sorted(server_errors.items()) + [(line, 0) for line in lines],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=["embedded", "services", "both"], default="both")
    parser.add_argument("--requests", type=int, default=10_000, help="per backend")
    parser.add_argument(
        "--database-url", default="postgresql+psycopg://postgres@127.0.0.1:5432/test"
    )
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/15")
    parser.add_argument("--chunk-seconds", type=int, default=300, help="one schemathesis run")
    parser.add_argument(
        "--workers", type=int, default=1, help="more than 1 can trip hypothesis in threads"
    )
    parser.add_argument("--seed", type=int, default=1000)
    parser.add_argument(
        "--log-dir", type=Path, default=Path("."), help="where each run's output is kept"
    )
    parser.add_argument(
        "schemathesis_args", nargs="*", help="after --: more `schemathesis run` options"
    )
    args = parser.parse_args()
    backends = []
    if args.backend in ("embedded", "both"):
        backends.append(("SQLite + embedded Redis", None, None))
    if args.backend in ("services", "both"):
        backends.append(("PostgreSQL + Redis", args.database_url, args.redis_url))
    results = []
    for name, database_url, redis_url in backends:
        print(f"== {name}", flush=True)
        results.append(fuzz_backend(name, database_url, redis_url, args))
    print()
    print("| backend | requests | 5xx | schema mismatches | fuzzer errors | runs | minutes |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in results:
        print(
            f"| {r['backend']} | {r['requests']:,} | {r['server_errors']} | {r['mismatches']} "
            f"| {r['fuzzer_errors']} | {r['runs']} | {float(r['seconds']) / 60:.1f} |"  # type: ignore[arg-type]
        )
    for r in results:
        for detail, _ in r["details"]:  # type: ignore[attr-defined]
            print(f"  {r['backend']}: {detail}")
    ok = all(r["server_errors"] == 0 and r["mismatches"] == 0 for r in results)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
