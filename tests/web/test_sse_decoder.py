"""The web client's SSE decoder (api/web/static/js/sse.js) meets the vectors that
shared/core/sse.py meets (tests/sse_vectors.json), run in Node: the module touches no DOM.

Each vector's chunks are fed as they are, then the whole body cut every 1, 2, 3, 5 and 7 bytes;
every way must give the vector's events (the format's answer, not the server decoder's
deliberate leniencies). Without Node the test skips, except in CI where it fails.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).parents[2]
VECTORS_FILE = ROOT / "tests" / "sse_vectors.json"
VECTORS = json.loads(VECTORS_FILE.read_text("utf-8"))["vectors"]
MODULE = ROOT / "api" / "web" / "static" / "js" / "sse.js"

# For each vector: the events from its chunks, then from its body cut every n bytes.
RUNNER = """
import { readFileSync } from "node:fs";
import { Decoder } from "%(module)s";
const { vectors } = JSON.parse(readFileSync(%(vectors)s, "utf-8"));
const encoder = new TextEncoder();
const decode = (chunks) => {
  const decoder = new Decoder();
  return chunks.flatMap((chunk) => decoder.feed(chunk)).map((e) => [e.name, e.data]);
};
const cut = (bytes, size) => {
  const chunks = [];
  for (let at = 0; at < bytes.length; at += size) chunks.push(bytes.subarray(at, at + size));
  return chunks;
};
const results = vectors.map((v) => {
  const body = encoder.encode(v.chunks.join(""));
  const sizes = [1, 2, 3, 5, 7].map((n) => decode(cut(body, n)));
  return [decode(v.chunks.map((c) => encoder.encode(c))), ...sizes];
});
process.stdout.write(JSON.stringify(results));
"""


@pytest.fixture(scope="module")
def decoded() -> list[list[Any]]:
    node = shutil.which("node")
    if node is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI needs Node.js for the web client's decoder")
        pytest.skip("node is not installed")
    script = RUNNER % {"module": MODULE.as_uri(), "vectors": json.dumps(str(VECTORS_FILE))}
    done = subprocess.run(
        [node, "--input-type=module", "-e", script],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    results: list[list[Any]] = json.loads(done.stdout)
    return results


@pytest.mark.parametrize("index", range(len(VECTORS)), ids=[v["name"] for v in VECTORS])
def test_the_web_decoder_reads_the_shared_vectors_as_the_format_says(
    decoded: list[list[Any]], index: int
) -> None:
    expected = VECTORS[index]["events"]
    for ways in decoded[index]:
        assert ways == expected
