"""The memory an import takes: the peak resident size of a fresh process importing one bundle
through the API (POST /sessions/import, Flask test client).

    .venv/bin/python bench/bench_import_memory.py [--database-url URL]

Four imports, each in its own process (so one's peak does not hide another's):
- `expanding`: about 0.5 MB of zip that unpacks to a 90 MiB conversation (470 messages of
  190 KB each, compressed 177:1, under the bomb check's 200:1). It was imported whole;
  it is now refused (413) once the conversation passes SESSION_IMPORT_MAX_SESSION_BYTES;
- `raised`: the same with that setting raised to 128 MiB: imported, streamed;
- `large`: a 30 MiB conversation of the same messages (160 of them), under the limit;
- `many`: 100,000 short messages (about 27 MiB).
Printed per import: the zip's size, the conversation's, the answer, the process's resident
size before the import and its peak during it (VmHWM, reset just before), and the growth.
Targets: `expanding` is refused; the others are imported; no import grows the process by
more than 4x the largest record allowed (2 MiB) plus 64 MiB, whatever the session's size.

Measured here (SQLite; before: the code before the import streamed):

    import      conversation   before: answer, growth    now: answer, growth
    expanding   89.9 MiB       201, +450 MiB             413, +1 MiB
    raised      89.9 MiB       (no such setting)         201, +22 MiB
    large       30.6 MiB       201, +153 MiB             201, +21 MiB
    many        27.1 MiB       201, +259 MiB             201, +45 MiB
"""

from __future__ import annotations

import io
import json
import os
import random
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from _common import ROOT, base_parser, print_table, verdict, workspace

MIB = 1024 * 1024
WORDS = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta"]


def conversation(messages: int, repeats: int) -> bytes:
    rng = random.Random(1)
    paragraph = " ".join(rng.choice(WORDS) for _ in range(200))
    out = io.BytesIO()
    for number in range(messages):
        record = {
            "id": f"{number:016x}",
            "role": "user" if number % 2 == 0 else "assistant",
            "content": (paragraph + f" {number} ") * repeats or f"{paragraph[:180]} {number}",
            "created_at": "2026-07-05T09:15:00Z",
        }
        out.write(json.dumps(record).encode() + b"\n")
    return out.getvalue()


def bundle(data: bytes) -> bytes:
    manifest = {
        "format": "eonyx-session",
        "format_version": 1,
        "exported_at": "2026-07-05T09:15:00Z",
        "session": {"id": "20260705T091500-1a2b3c4d", "title": "Big", "source": "web"},
        "files": {},
    }
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("manifest.json", json.dumps(manifest))
        archive.writestr("conversation.jsonl", data)
    return out.getvalue()


def status_kib(field: str) -> int:
    """VmRSS (resident now) or VmHWM (the peak since the last reset) of this process."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status (Linux only)")


def reset_peak() -> None:
    """Start VmHWM again from the current size (Linux: clear_refs 5), so that the peak read
    after the import is the import's, not that of the set-up (migrations) before it."""
    Path("/proc/self/clear_refs").write_text("5")


def child(bundle_path: str, database_url: str | None) -> None:
    """Import one bundle in this (fresh) process and print its figures as JSON."""
    from api.app import create_app
    from api.context import runtime_of
    from shared.core.settings import load_settings
    from tests.conftest import create_account

    data = Path(bundle_path).read_bytes()
    with workspace(database_url) as ws:
        env = {"DATA_DIR": str(ws.data_dir), "DATABASE_URL": ws.database_url}
        env |= {"HOME": str(ws.root), "RATE_LIMITS_ENABLED": "false"}
        limit = os.environ.get("BENCH_SESSION_LIMIT")  # the `raised` case's setting
        if limit:
            env["SESSION_IMPORT_MAX_SESSION_BYTES"] = limit
        settings = load_settings(env)
        app = create_app(settings, jobs_queue=None)
        rt = runtime_of(app)
        try:
            account = create_account(rt, "bench")
            client = app.test_client()
            client.get("/api/v1/sessions", headers=account.headers)  # warm the app up
            before = status_kib("VmRSS")
            reset_peak()
            response = client.post(
                "/api/v1/sessions/import",
                data=data,
                content_type="application/zip",
                headers=account.headers,
            )
            peak = status_kib("VmHWM")
            error = (response.get_json(silent=True) or {}).get("error") or {}
        finally:
            rt.close()
    print(
        json.dumps(
            {
                "status": response.status_code,
                "code": error.get("code"),
                "before": before,
                "peak": peak,
            }
        )
    )


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)
        return 0
    args = base_parser(__doc__.split("\n\n")[0]).parse_args()
    expanding = conversation(470, 190)
    cases = {  # name: (conversation, SESSION_IMPORT_MAX_SESSION_BYTES or None: the default)
        "expanding": (expanding, None),
        "raised": (expanding, str(128 * MIB)),
        "large": (conversation(160, 190), None),
        "many": (conversation(100_000, 0), None),
    }
    rows, peaks, statuses = [], {}, {}
    with tempfile.TemporaryDirectory() as folder:
        for name, (data, limit) in cases.items():
            path = Path(folder) / f"{name}.zip"
            path.write_bytes(bundle(data))
            command = [sys.executable, __file__, "--child", str(path)]
            command += [args.database_url] if args.database_url else []
            env = {**os.environ, "PYTHONPATH": str(ROOT), "BENCH_SESSION_LIMIT": limit or ""}
            done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
            figures = json.loads(done.stdout.strip().splitlines()[-1])
            growth = (figures["peak"] - figures["before"]) / 1024
            peaks[name], statuses[name] = growth, figures["status"]
            answer = f"{figures['status']} {figures['code'] or ''}".strip()
            rows.append(
                [
                    name,
                    f"{path.stat().st_size / 1e6:.2f}",
                    f"{len(data) / MIB:.1f}",
                    answer,
                    f"{figures['before'] / 1024:.0f}",
                    f"{figures['peak'] / 1024:.0f}",
                    f"{growth:.0f}",
                ]
            )
    print_table(
        [
            "bundle",
            "zip MB",
            "conversation MiB",
            "answer",
            "RSS before MiB",
            "peak MiB",
            "growth MiB",
        ],
        rows,
    )
    budget = 4 * 2 + 64  # 4x a 2 MiB record, plus 64 MiB
    return verdict(
        [
            ("the expanding bundle is refused (413)", statuses["expanding"] == 413),
            ("the expanding bundle is imported with the limit raised", statuses["raised"] == 201),
            ("the large bundle is imported", statuses["large"] == 201),
            ("the many-message bundle is imported", statuses["many"] == 201),
            (f"every import grows the process by under {budget} MiB", max(peaks.values()) < budget),
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
