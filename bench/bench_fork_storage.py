"""What a fork adds to the store: a session of 20 messages holding 8 photos, forked 5 times.

    .venv/bin/python bench/bench_fork_storage.py [--forks 5] [--database-url URL]

A fork used to copy the session's directory (its images); now its images are hard links to
the original's. The script forks through the API and prints, per fork, the bytes the store
grew by (each file counted once, as `du -b` does) against the fork's transcript, and what
the old copy would have added (the transcript plus every image again). It checks that the
growth is the transcript only and that the user's usage figure agrees with the disk.
"""

from __future__ import annotations

import io
import os
import random

from _common import base_parser, bench_account, make_history, print_header, verdict, workspace
from PIL import Image

from api.app import create_app
from api.context import runtime_of
from shared.accounts import storage
from shared.core.settings import load_settings
from shared.index import sync
from shared.sessions import image_store

MESSAGES = 20
IMAGES = 8


def photo(rng: random.Random, size: tuple[int, int] = (1024, 768)) -> bytes:
    picture = Image.frombytes("RGB", size, rng.randbytes(size[0] * size[1] * 3))
    out = io.BytesIO()
    picture.save(out, "JPEG", quality=80)
    return out.getvalue()


def disk_bytes(path: os.PathLike[str] | str) -> int:
    seen: dict[tuple[int, int], int] = {}
    for folder, _, names in os.walk(path):
        for name in names:
            info = os.lstat(os.path.join(folder, name))
            seen[(info.st_dev, info.st_ino)] = info.st_size
    return sum(seen.values())


def main() -> int:
    parser = base_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--forks", type=int, default=5)
    args = parser.parse_args()
    rng = random.Random(7)
    with workspace(args.database_url, keep=args.keep) as ws:
        settings = load_settings(
            {"DATA_DIR": str(ws.data_dir), "DATABASE_URL": ws.database_url, "HOME": str(ws.root)}
        )
        app = create_app(settings, jobs_queue=None)
        rt = runtime_of(app)
        try:
            principal, token = bench_account(rt)
            user_id = principal.user_id
            print_header("bench_fork_storage", ws, f"{MESSAGES} messages, {IMAGES} images")
            state, _ = rt.store.create(user_id, source="web", title="Photos")
            records = make_history(rng, MESSAGES)
            photos = [
                image_store.check_image(photo(rng), settings.max_image_bytes) for _ in range(IMAGES)
            ]
            users = [r for r in records if r["role"] == "user"]
            for n, image in enumerate(photos):
                users[n % len(users)].setdefault("images", [])
                users[n % len(users)]["images"] += image_store.save(
                    rt.store, user_id, state.id, [image]
                )
            rt.store.append(user_id, state.id, records)
            loaded, info = rt.store.load(user_id, state.id, keep_messages=False)
            with rt.db.session() as db:
                sync.record(db, loaded, info)
            image_bytes = sum(len(p.data) for p in photos)
            print(
                f"   session: {info.size} bytes of transcript, {loaded.image_count} images "
                f"({image_bytes / 2**20:.2f} MiB)"
            )
            client = app.test_client()
            headers = {"Authorization": f"Bearer {token}"}
            user_dir = rt.store.users_dir / user_id
            grown_total = copy_total = 0
            exact = True
            print(f"   {'fork':<6}{'store grew':>14}{'transcript':>14}{'a copy would add':>20}")
            for n in range(1, args.forks + 1):
                before = disk_bytes(user_dir)
                response = client.post(
                    f"/api/v1/sessions/{state.id}/fork", json={}, headers=headers
                )
                assert response.status_code == 201, response.get_json()
                fork_id = response.get_json()["id"]
                grown = disk_bytes(user_dir) - before
                transcript = rt.store.path(user_id, fork_id).stat().st_size
                copy = transcript + image_bytes
                exact &= grown == transcript
                grown_total += grown
                copy_total += copy
                print(f"   {n:<6}{grown:>14,}{transcript:>14,}{copy:>20,}")
            print(
                f"   {args.forks} forks: the store grew by {grown_total / 2**20:.3f} MiB "
                f"(a copy of the images would add {copy_total / 2**20:.2f} MiB)"
            )
            figure = storage.storage_usage(rt, user_id)["used_bytes"]
            fresh = storage.storage_usage(rt, user_id, fresh=True)["used_bytes"]
            on_disk = disk_bytes(user_dir)
            print(f"   usage: running {figure:,}, measured {fresh:,}, on disk {on_disk:,} bytes")
            return verdict(
                [
                    ("a fork adds its transcript only", exact),
                    ("the usage figure matches the disk", figure == fresh == on_disk),
                ]
            )
        finally:
            rt.close()


if __name__ == "__main__":
    raise SystemExit(main())
