"""Schemathesis against a running Eonyx: the harness of the suite's fuzz test and of the long
run by hand (bench/fuzz_api.py).

The app is served on a loopback port by werkzeug in a thread, wired to the fake model, with
an administrator's token for the fuzzer. A WSGI middleware counts every request the server
answered and every 5xx (with its method, path and status), so the figures do not depend on
the fuzzer's own report. Schemathesis runs as its own process (`schemathesis run`) with every
check and every phase (examples, coverage, fuzzing, stateful); the hooks in
tests/openapi_fuzz_hooks.py keep it from revoking its own token and point the offerings it
adds at the fake model (this sandbox reaches no other).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server

from api import create_app
from api.context import runtime_of
from shared.core.settings import Settings
from shared.runtime import Runtime
from shared.storage.orm import ApiToken
from tests.conftest import create_account

ROOT = Path(__file__).resolve().parent.parent
# Checks that judge the API rather than the fuzzer's guesses. Left out:
# - positive_data_acceptance: it expects 2xx for any request the schema allows, but a schema
#   cannot say which ids exist, which cursor the server gave out or which session is busy;
# - max_response_time: timing is for bench/, never a pass/fail;
# - object_level_authorization: needs two users' credentials; tests/api covers it.
CHECKS = [
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_headers_conformance",
    "response_schema_conformance",
    "negative_data_rejection",
    "missing_required_header",
    "unsupported_method",
    "allow_header_conformance",
    "use_after_free",
    "ensure_resource_availability",
    "ignored_auth",
]


REJECTIONS = ["400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429"]


# The checks are chosen here, not with --checks: a check named on the command line is on for
# every operation, whatever an operation's own section says.
# - A body over MAX_REQUEST_BYTES is refused with 413 before any field is read: a rejection
#   like 400 or 422, which schemathesis does not list by default.
# - DELETE /sessions/{id} moves a session to the trash, where it is still read (with its
#   `deleted_at`) and restored: a read after it answers 200, which use_after_free takes for a
#   resource that outlived its delete. tests/api covers the trash, and a purge's 404.
def _config() -> str:
    sections = ["[checks]\nenabled = false"]
    for name in CHECKS:
        sections.append(f"[checks.{name}]\nenabled = true")
        if name == "negative_data_rejection":
            sections[-1] += f"\nexpected-statuses = {json.dumps(REJECTIONS)}"
    sections.append(
        '[[operations]]\ninclude-path-regex = "^/api/v1/sessions/\\\\{session_id\\\\}"\n'
        "checks.use_after_free.enabled = false"
    )
    return "\n\n".join(sections) + "\n"


CONFIG = _config()


class _Quiet(WSGIRequestHandler):
    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        pass


@dataclass
class Tally:
    """What the server answered: every request, and each 5xx by method, path and status."""

    requests: int = 0
    server_errors: Counter[str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def wrap(self, app: Any) -> Any:
        def counted(environ: dict[str, Any], start_response: Any) -> Any:
            def start(status: str, headers: Any, exc_info: Any = None) -> Any:
                code = int(status.split()[0])
                with self.lock:
                    self.requests += 1
                    if code >= 500:
                        path = environ.get("PATH_INFO", "")
                        self.server_errors[f"{environ['REQUEST_METHOD']} {path} {code}"] += 1
                return start_response(status, headers, exc_info)

            return app(environ, start)

        return counted


@dataclass
class Served:
    url: str
    token: str
    token_id: str
    rt: Runtime
    tally: Tally


@contextmanager
def served(settings: Settings) -> Iterator[Served]:
    """The app for `settings` on a free loopback port, migrated, with an admin and a token."""
    app = create_app(settings, jobs_queue=_queue(settings))
    rt = runtime_of(app)
    rt.db.migrate()
    admin = create_account(rt, "fuzz-admin", admin=True, api=True)
    with rt.db.session() as db:
        token_id = db.query(ApiToken.id).filter(ApiToken.user_id == admin.user_id).scalar()
    tally = Tally()
    server: BaseWSGIServer = make_server(
        "127.0.0.1", 0, tally.wrap(app), threaded=True, request_handler=_Quiet
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Served(f"http://127.0.0.1:{server.port}", admin.token, token_id, rt, tally)
    finally:
        server.shutdown()
        server.server_close()
        rt.close()


def _queue(settings: Settings) -> Any:
    from workers.queue import celery_jobs

    return celery_jobs(settings)


@dataclass
class Outcome:
    requests: int  # answered by the server
    server_errors: Counter[str]
    failures: Counter[str]  # schemathesis failures by kind (SERVER_ERROR_TYPES are 5xx)
    failure_lines: list[str]
    exit_code: int
    output: str


def run_schemathesis(
    target: Served,
    fake_model_url: str,
    report_dir: Path,
    *,
    max_time: int | None = None,
    max_examples: int | None = None,
    seed: int | None = None,
    workers: int = 1,
    phases: str = "examples,coverage,fuzzing,stateful",
    extra: tuple[str, ...] = (),
) -> Outcome:
    """One `schemathesis run` against `target`; the server's and the fuzzer's figures."""
    report = report_dir / "report.json"
    (report_dir / "schemathesis.toml").write_text(CONFIG)
    command = [
        str(Path(sys.executable).with_name("schemathesis")),
        "run",
        f"{target.url}/api/v1/openapi.json",
        "--header",
        f"Authorization: Bearer {target.token}",
        "--phases",
        phases,
        "--exclude-path",
        "/api/v1/auth/logout",  # revokes the fuzzer's own token
        "--workers",
        str(workers),
        "--report",
        "json",
        "--report-json-path",
        str(report),
        "--continue-on-failure",
        "--no-color",
        "--request-timeout",
        "30",
    ]
    if max_time:
        command += ["--max-time", str(max_time)]
    if max_examples:
        command += ["--max-examples", str(max_examples)]
    if seed is not None:
        command += ["--seed", str(seed)]
    command += list(extra)
    env = {
        **os.environ,
        "SCHEMATHESIS_HOOKS": "tests.openapi_fuzz_hooks",
        "EONYX_FUZZ_OWN_TOKEN_ID": target.token_id,
        "EONYX_FUZZ_MODEL_URL": fake_model_url,
        "PYTHONPATH": str(ROOT),
    }
    done = subprocess.run(
        command, env=env, cwd=report_dir, capture_output=True, text=True, check=False
    )
    failures, lines = _failures(report)
    return Outcome(
        target.tally.requests,
        Counter(target.tally.server_errors),
        failures,
        lines,
        done.returncode,
        done.stdout + done.stderr,
    )


SERVER_ERROR_TYPES = {"ServerError", "ContentTypeServerError"}


def _failures(report: Path) -> tuple[Counter[str], list[str]]:
    """Failures by kind (`ServerError`, `JsonSchemaError`...) from schemathesis' JSON report,
    with the run's errors as `error`, and one line per kind naming the operations."""
    try:
        data = json.loads(report.read_text())
    except (FileNotFoundError, ValueError):
        return Counter({"error": 1}), ["schemathesis wrote no report"]
    counts: Counter[str] = Counter()
    lines: list[str] = []
    for group in data.get("failures") or []:
        counts[group["type"]] += group["count"]
        operations = ", ".join(group.get("operations") or [])
        lines.append(f"{group['code']} {group['title']} (x{group['count']}): {operations}")
    for error in data.get("errors") or []:
        counts["error"] += error.get("count", 1)
        lines.append(f"error: {error['title']}")
    return counts, lines
