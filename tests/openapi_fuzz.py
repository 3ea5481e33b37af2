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

import base64
import io
import json
import os
import random
import subprocess
import sys
import threading
import zipfile
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server

from api.app import create_app
from api.context import runtime_of
from shared.core.settings import Settings
from shared.db.orm import ApiToken
from shared.runtime import Runtime
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


# -- known cases --------------------------------------------------------------------------
#
# Requests that once answered 500 (found by hand, by an outside probe or by this fuzzer),
# replayed against the served app on every run: each must be refused with its status and the
# JSON error shape, and leave the store as it was (tests/conftest.py `stored`). Schemathesis
# generates from the OpenAPI document and rarely reaches these (a number of 4,301 digits, a
# crafted cursor, a bundle); here they are recorded once and never regress. Add a case with
# the issue that found it.


@dataclass(frozen=True)
class KnownCase:
    name: str  # with the issue that found it
    method: str
    path: str
    body: bytes = b""
    content_type: str = "application/json"
    status: int = 400
    code: str | None = None  # the error's code, when the case pins one
    auth: str = "admin"  # "none", "admin" (the fuzzer's token) or "teams" (a signed bot token)


def _json_body(template: str) -> bytes:
    """JSON text with DIGITS, DEEP and CHAT put in (as text: they are no JSON a client's
    library would write)."""
    text = template.replace("DIGITS", DIGITS).replace("DEEP", DEEP).replace("CHAT", CHAT)
    return text.encode()


def _cursor(**fields: Any) -> str:
    """A listing cursor of the default filters with `fields` crafted (JSON text as given)."""
    from shared.index.listing import Filters

    base = {"v": 2, "f": Filters().fingerprint(), "g": "x", "s": 1, "t": 1, "k": "K"}
    text = json.dumps(base | {k: "@" + k for k in fields}, separators=(",", ":"))
    text = text.replace('"K"', '[0,"2026-07-05T09:15:00Z","20260705T091500-1a2b3c4d"]')
    for key, raw in fields.items():
        text = text.replace(f'"@{key}"', raw)
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _search_cursor(offset: str) -> str:
    from shared.index.listing import Filters

    text = '{"v":2,"f":"' + Filters().fingerprint("x") + '","o":' + offset + "}"
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _zip(manifest: bytes | None = None, conversation: bytes | None = None) -> bytes:
    default = {
        "format": "eonyx-session",
        "format_version": 1,
        "session": {"id": "20260705T091500-1a2b3c4d", "title": "Old chat", "source": "web"},
        "files": {},
    }
    line = b'{"role": "user", "content": "hi", "created_at": "2026-07-05T09:15:00Z"}\n'
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("manifest.json", manifest or json.dumps(default).encode())
        archive.writestr("conversation.jsonl", conversation or line)
    return out.getvalue()


def _record(**fields: Any) -> bytes:
    value = {"role": "assistant", "content": "x", "created_at": "2026-07-05T09:15:00Z"}
    return json.dumps(value | fields).encode() + b"\n"


def _expanding() -> bytes:
    """0.5 MB of zip unpacking to a 90 MiB conversation, compressed under 200:1."""
    rng = random.Random(1)
    words = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta"]
    paragraph = " ".join(rng.choice(words) for _ in range(200))
    lines = (
        _record(role="user", content=f"{paragraph} {n} " * 190 + rng.randbytes(800).hex())
        for n in range(470)
    )
    return _zip(conversation=b"".join(lines))


DIGITS = "7" * 4301
DEEP = "[" * 100_000 + "]" * 100_000
CHAT = '"messages": [{"role": "user", "content": "hi"}]'
ISSUE_20 = "issue 20"


def known_cases() -> list[KnownCase]:
    """Every known case (built on demand: a few are bundles)."""
    cases = [
        KnownCase(
            f"{ISSUE_20}: a {len(DIGITS)}-digit integer before login ({path})",
            "POST",
            f"/api/v1{path}",
            _json_body('{"username": "a", "password": DIGITS}'),
            code="invalid_json",
            auth="none",
        )
        for path in ("/auth/login", "/auth/session")
    ]
    cases += [
        KnownCase(
            f"{ISSUE_20}: a {len(DIGITS)}-digit integer in {method} {path}",
            method,
            path,
            _json_body('{"content": "hi", "n": DIGITS}'),
            code="invalid_json",
        )
        for method, path in (
            ("POST", "/api/v1/sessions"),
            ("POST", "/api/v1/sessions/20260705T091500-1a2b3c4d/turns"),
            ("PUT", "/api/v1/memory/user"),
            ("POST", "/api/v1/models/offerings"),
            ("POST", "/v1/chat/completions"),
            ("POST", "/v1/responses"),
        )
    ]
    cases += [
        KnownCase(
            f"{ISSUE_20}: NaN", "POST", "/api/v1/folders", b'{"name": NaN}', code="invalid_json"
        ),
        KnownCase(
            f"{ISSUE_20}: deep JSON in /v1/chat/completions",
            "POST",
            "/v1/chat/completions",
            _json_body('{"model": "default", CHAT, "x": DEEP}'),
            code="invalid_json",
        ),
        KnownCase(
            f"{ISSUE_20}: a model holding a lone surrogate",
            "POST",
            "/v1/chat/completions",
            _json_body('{"model": "\\ud800", CHAT}'),
            code="invalid_request",
        ),
        KnownCase(
            f"{ISSUE_20}: a model holding NUL (a 500 on PostgreSQL)",
            "POST",
            "/v1/responses",
            _json_body('{"model": "a\\u0000b", "input": "hi"}'),
            code="invalid_request",
        ),
        KnownCase(
            f"{ISSUE_20}: a lone surrogate in a message",
            "POST",
            "/v1/chat/completions",
            _json_body(
                '{"model": "default", "messages": [{"role": "user", "content": "\\udc00"}]}'
            ),
            code="invalid_text",
        ),
        KnownCase(
            f"{ISSUE_20}: deep JSON to the Teams endpoint with a valid token",
            "POST",
            "/integrations/teams/messages",
            _json_body('{"type": "message", "channelData": DEEP}'),
            code="invalid_activity",
            auth="teams",
        ),
        KnownCase(
            f"{ISSUE_20}: a {len(DIGITS)}-digit integer to the Teams endpoint",
            "POST",
            "/integrations/teams/messages",
            _json_body('{"type": "message", "n": DIGITS}'),
            code="invalid_activity",
            auth="teams",
        ),
    ]
    crafted = {
        "a huge change number": {"s": "1" + "0" * 30},
        "a negative change number": {"s": "-1"},
        "a float change number": {"s": "1.5"},
        "an infinite time": {"t": "Infinity"},
        "a year-1 key": {"k": '[0,"0001-01-01T00:00:00+14:00","20260705T091500-1a2b3c4d"]'},
        "a nested key": {"k": '[0,{"a":[1]},"20260705T091500-1a2b3c4d"]'},
    }
    cases += [
        KnownCase(
            f"{ISSUE_20}: a listing cursor with {what}",
            "GET",
            f"/api/v1/sessions?limit=1&cursor={_cursor(**fields)}",
            code="invalid_cursor",
        )
        for what, fields in crafted.items()
    ]
    cases += [
        KnownCase(
            f"{ISSUE_20}: a search cursor with offset {offset}",
            "GET",
            f"/api/v1/sessions?q=x&cursor={_search_cursor(offset)}",
            code="invalid_cursor",
        )
        for offset in ("Infinity", "1" + "0" * 30, "-1")
    ]
    bundles = {
        "deep JSON in the manifest": (_zip(manifest=f'{{"x": {DEEP}}}'.encode()), 400),
        "deep JSON in the conversation": (_zip(conversation=DEEP.encode() + b"\n"), 400),
        "a record with malformed tool_calls": (
            _zip(conversation=_record(tool_calls=[{"function": "x"}])),
            400,
        ),
        "a title with RLO": (
            _zip(
                manifest=json.dumps(
                    {
                        "format": "eonyx-session",
                        "format_version": 1,
                        "session": {"title": "invoice\u202egnp.exe"},
                    }
                ).encode()
            ),
            400,
        ),
        "a record over 2 MiB": (
            _zip(conversation=_record(content=random.Random(2).randbytes(1_100_000).hex())),
            413,
        ),
        "0.5 MB unpacking to a 90 MiB session": (_expanding(), 413),
    }
    cases += [
        KnownCase(
            f"{ISSUE_20}: an import bundle with {what}",
            "POST",
            "/api/v1/sessions/import",
            data,
            content_type="application/zip",
            status=status,
        )
        for what, (data, status) in bundles.items()
    ]
    return cases


def replay_known_cases(
    target: Served, sign: Callable[[], str] | None = None
) -> tuple[int, list[str]]:
    """Every known case against `target`: (how many ran, one line per case that failed).
    `sign` gives a valid Teams bot token; without it the Teams cases are left out."""
    from tests.conftest import stored

    failures: list[str] = []
    ran = 0
    with httpx.Client(base_url=target.url, timeout=60) as client:
        for case in known_cases():
            if case.auth == "teams" and sign is None:
                continue
            headers = {"Content-Type": case.content_type}
            if case.auth == "admin":
                headers["Authorization"] = f"Bearer {target.token}"
            elif case.auth == "teams" and sign is not None:
                headers["Authorization"] = f"Bearer {sign()}"
            before = stored(target.rt)
            response = client.request(case.method, case.path, content=case.body, headers=headers)
            ran += 1
            problem = _judge(case, response)
            if problem is None and stored(target.rt) != before:
                problem = "the store changed"
            if problem is not None:
                failures.append(f"{case.name}: {problem}")
    return ran, failures


def _judge(case: KnownCase, response: httpx.Response) -> str | None:
    """What is wrong with the answer to `case`, or None: its status, and the error in the
    shape of its API (OpenAI's under /v1, Eonyx's elsewhere) with its code."""
    if response.status_code != case.status:
        return f"answered {response.status_code}, not {case.status}: {response.text[:300]}"
    try:
        error = response.json()["error"]
    except (ValueError, KeyError, TypeError):
        return f"the answer is not a JSON error: {response.text[:300]}"
    keys = {"message", "type", "param", "code"} if case.path.startswith("/v1/") else None
    if keys is not None and set(error) != keys:
        return f"not OpenAI's error shape: {error}"
    if keys is None and not ({"code", "message"} <= set(error) <= {"code", "message", "details"}):
        return f"not Eonyx's error shape: {error}"
    if case.code is not None and error.get("code") != case.code:
        return f"code {error.get('code')!r}, not {case.code!r}"
    return None
