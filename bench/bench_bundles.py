"""Export and import of one session: 50 messages (a tool call among them) and 5 images.

    .venv/bin/python bench/bench_bundles.py [--runs 20] [--database-url URL]

Times, through shared.sessions.bundles and through the API (Flask test client): the zip
export, the Markdown export, and the import of that zip (each import checks the whole bundle,
decodes every image with Pillow, then writes a new session). No target is set in the issue;
the script checks that an import gives back the same conversation and images, and prints the
figures.
"""

from __future__ import annotations

import io
import random
import sys
import time

from _common import (
    base_parser,
    bench_account,
    make_history,
    median,
    ms,
    percentile,
    print_header,
    print_table,
    verdict,
    workspace,
)
from PIL import Image

from api.app import create_app
from api.context import runtime_of
from shared.core.settings import load_settings
from shared.index import sync
from shared.sessions import bundles, image_store

MESSAGES = 50
IMAGES = 5


def photo(rng: random.Random, size: tuple[int, int] = (1024, 768)) -> bytes:
    """A JPEG the size of a phone photo's upload (noise, so it does not compress away)."""
    picture = Image.frombytes("RGB", size, rng.randbytes(size[0] * size[1] * 3))
    out = io.BytesIO()
    picture.save(out, "JPEG", quality=80)
    return out.getvalue()


def timed(fn, runs: int) -> list[int]:  # type: ignore[no-untyped-def]
    fn()  # warm-up
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter_ns()
        fn()
        samples.append(time.perf_counter_ns() - t0)
    return samples


def main() -> int:
    parser = base_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
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
            print_header("bench_bundles", ws, f"{MESSAGES} messages, {IMAGES} images")

            state, _ = rt.store.create(user_id, source="web", title="A long chat with photos")
            records = make_history(rng, MESSAGES, tool_every=10)
            photos = [image_store.check_image(photo(rng), settings.max_image_bytes)]
            photos += [
                image_store.check_image(photo(rng), settings.max_image_bytes) for _ in range(4)
            ]
            users = [r for r in records if r["role"] == "user"]
            for record, image in zip(users[:: len(users) // IMAGES], photos, strict=False):
                record["images"] = image_store.save(rt.store, user_id, state.id, [image])
            rt.store.append(user_id, state.id, records)
            loaded, info = rt.store.load(user_id, state.id, keep_messages=False)
            with rt.db.session() as db:
                sync.record(db, loaded, info)
            image_bytes = sum(len(p.data) for p in photos)
            print(
                f"   session: {loaded.message_count} chat messages ({len(records)} records), "
                f"{loaded.image_count} images ({image_bytes / 1e6:.2f} MB of JPEG)"
            )

            bundle = bundles.export_zip(rt, principal, state.id)
            imported, _ = bundles.import_bundle(rt, principal, io.BytesIO(bundle))
            same = (
                rt.store.load(user_id, imported.id)[0].messages
                == rt.store.load(user_id, state.id)[0].messages
            )
            print(f"   bundle: {len(bundle) / 1e6:.2f} MB; import gives the same messages: {same}")

            client = app.test_client()
            headers = {"Authorization": f"Bearer {token}"}

            def http_export() -> None:
                response = client.get(f"/api/v1/sessions/{state.id}/export", headers=headers)
                assert response.status_code == 200, response.status_code

            def http_import() -> None:
                response = client.post(
                    "/api/v1/sessions/import",
                    data=bundle,
                    content_type="application/zip",
                    headers=headers,
                )
                assert response.status_code == 201, response.get_json()

            rows = []
            for label, fn in (
                (
                    "export zip (bundles.export_zip)",
                    lambda: bundles.export_zip(rt, principal, state.id),
                ),
                ("export markdown", lambda: bundles.export_markdown(rt, principal, state.id)),
                (
                    "import zip (bundles.import_bundle)",
                    lambda: bundles.import_bundle(rt, principal, io.BytesIO(bundle)),
                ),
                (
                    "  of which: check the bundle",
                    lambda: bundles.read_bundle(rt, io.BytesIO(bundle)),
                ),
                ("GET /sessions/<id>/export", http_export),
                ("POST /sessions/import", http_import),
            ):
                samples = timed(fn, args.runs)
                rows.append(
                    [label, str(len(samples)), ms(median(samples)), ms(percentile(samples, 99))]
                )
        finally:
            rt.close()

    print()
    print_table(["50 messages, 5 images", "runs", "p50 ms", "p99 ms"], rows)
    return verdict([("an import gives back the exported conversation", same)])


if __name__ == "__main__":
    sys.exit(main())
