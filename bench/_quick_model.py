"""A model that answers at once and costs next to nothing: for benches that measure the server.

    .venv/bin/python bench/_quick_model.py      # prints its base URL, serves until SIGTERM/SIGINT
    .venv/bin/python bench/_quick_model.py --delay 2    # each completion answers after 2 s

tests/fake_llm.py is the model of the test suite (scripts, errors, streams, recorded requests),
served by werkzeug's development server, which closes every connection and spends about a
millisecond of CPU per request. Under a concurrency bench that CPU comes out of the same two
cores the server is measured on, and each model call pays a new TCP connection. This one is an
asyncio HTTP/1.1 server with keep-alive that answers every chat completion (not streamed) by
echoing the last user message, which is all a turn, a title job or an extraction needs to
finish. Anything else answers 404.

`--delay SECONDS` (or QUICK_MODEL_DELAY; default 0) makes each chat completion wait that long
before it answers, as a real model does, without costing any CPU meanwhile: for benches of
many turns waiting on the model at once (bench_connections.py).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import signal
import sys
from typing import Any

MAX_BODY = 64 * 1024 * 1024


def completion(body: dict[str, Any]) -> dict[str, Any]:
    said = ""
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            content = message.get("content")
            said = content if isinstance(content, str) else json.dumps(content)
            break
    answer = f"You said: {said[:200]}"
    return {
        "id": "chatcmpl-quick",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", "quick-model"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": answer},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def response(status: str, payload: dict[str, Any]) -> bytes:
    data = json.dumps(payload).encode()
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(data)}\r\n\r\n"
    )
    return head.encode() + data


async def serve_connection(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float = 0.0
) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            request_line, *header_lines = head.decode("latin-1").split("\r\n")
            method, path, _ = request_line.split(" ", 2)
            headers = {
                name.strip().lower(): value.strip()
                for name, _, value in (line.partition(":") for line in header_lines if line)
            }
            length = int(headers.get("content-length") or 0)
            if length > MAX_BODY:
                return
            raw = await reader.readexactly(length) if length else b""
            if method == "POST" and path.endswith("/chat/completions"):
                body = json.loads(raw or b"{}")
                if body.get("stream"):
                    writer.write(response("400 Bad Request", {"error": {"message": "no streams"}}))
                else:
                    if delay:
                        await asyncio.sleep(delay)
                    writer.write(response("200 OK", completion(body)))
            else:
                writer.write(response("404 Not Found", {"error": {"message": "not here"}}))
            await writer.drain()
            if headers.get("connection", "").lower() == "close":
                return
    except (asyncio.IncompleteReadError, ConnectionError, ValueError):
        return
    finally:
        writer.close()


async def main(delay: float) -> None:
    serve = functools.partial(serve_connection, delay=delay)
    server = await asyncio.start_server(serve, "127.0.0.1", 0, backlog=1024)
    port = server.sockets[0].getsockname()[1]
    print(f"http://127.0.0.1:{port}/v1", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="A chat completions model that answers at once.")
    parser.add_argument(
        "--delay",
        type=float,
        default=float(os.environ.get("QUICK_MODEL_DELAY") or 0),
        help="seconds each chat completion waits before it answers (default: "
        "QUICK_MODEL_DELAY, else 0)",
    )
    asyncio.run(main(parser.parse_args().delay))
    sys.exit(0)
