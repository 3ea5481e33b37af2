"""A fake OpenAI-compatible model server for tests, on 127.0.0.1 in a background thread.

    def test_something(fake_llm: FakeLLM) -> None:
        fake_llm.script(text("Hello"), error(429, "slow down", headers={"Retry-After": "1"}))
        offering = fake_llm.offering()          # an Offering pointing at fake_llm.base_url
        ...
        assert fake_llm.requests[0].messages[-1]["content"] == "hi"

Scripted replies are served in order to `POST .../chat/completions`, each once. Text and
tool-call replies come as one JSON body, or as server-sent `chat.completion.chunk` events when
the request asked for `"stream": true`. With the script empty, the answer is `model_answer`'s
(or what `set_default` returns): it echoes the last user message, so tests that do not care
about the model need no script, but like a real model it calls the tool that `tool_choice` or
the message names and answers in the `response_format` it is given. Every request is logged
(`requests`), scripted or not, before any scripted delay.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
import traceback
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server
from werkzeug.wrappers import Request, Response

from shared.llm.client import Offering
from tests.fake_schema import hints_in, instance

FAKE_MODEL = "fake-model"


@dataclass
class Reply:
    """One scripted answer. Build it with `text`, `tool_calls`, `error` or `broken_stream`."""

    status: int = 200
    content: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # OpenAI's format
    finish_reason: str | None = None  # default: "tool_calls" when there are some, else "stop"
    usage: dict[str, Any] | None = None  # default: rough counts from the request
    body: Any = None  # an error's body: a dict (sent as JSON) or a str (sent as text)
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds before anything is sent (to trigger read timeouts)
    chunk_size: int = 4  # characters per streamed content or arguments delta
    chunk_delay: float = 0.0  # seconds between streamed events
    die_after: int | None = None  # streaming: drop the connection after this many events


def text(content: str, **options: Any) -> Reply:
    """A plain answer."""
    return Reply(content=content, **options)


def tool_call(
    name: str, arguments: dict[str, Any] | str, *, id: str | None = None
) -> dict[str, Any]:
    """One tool call in OpenAI's format, for `tool_calls(...)`."""
    return {
        "id": id or f"call_{uuid.uuid4().hex[:12]}",
        "type": "function",
        "function": {
            "name": name,
            "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
        },
    }


def tool_calls(*calls: dict[str, Any], content: str | None = None, **options: Any) -> Reply:
    """An answer that calls tools (build each with `tool_call`)."""
    return Reply(content=content, tool_calls=list(calls), **options)


def error(
    status: int,
    message: str | None = None,
    *,
    body: Any = None,
    headers: dict[str, str] | None = None,
    type: str = "invalid_request_error",
    code: str | None = None,
    delay: float = 0.0,
) -> Reply:
    """An error status; with `message`, an OpenAI-style `{"error": {...}}` body."""
    if body is None and message is not None:
        body = {"error": {"message": message, "type": type, "param": None, "code": code}}
    return Reply(status=status, body=body, headers=dict(headers or {}), delay=delay)


def broken_stream(content: str, after: int = 2, **options: Any) -> Reply:
    """A streamed answer whose connection drops after `after` events (no [DONE])."""
    return Reply(content=content, die_after=after, **options)


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # names in lower case
    body: Any  # the parsed JSON body, or None
    at: float  # time.monotonic() when it arrived

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list((self.body or {}).get("messages") or [])

    @property
    def streamed(self) -> bool:
        return bool((self.body or {}).get("stream"))


def last_user_text(body: Any) -> str:
    for message in reversed((body or {}).get("messages") or []):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return "".join(p.get("text", "") for p in content if isinstance(p, dict))
            return str(content or "")
    return ""


def echo(request: RecordedRequest) -> Reply:
    """The last user message, word for word (the default answer without tools or formats)."""
    return text(last_user_text(request.body))


# Eonyx offers these on every turn: naming one ("memory") in a message does not call it.
EONYX_TOOLS = frozenset({"memory", "manage_memory"})


def model_answer(request: RecordedRequest) -> Reply:
    """The default answer: what a real model would do with the request's tools and format.

    - `tool_choice` a named function: call it (a 400 if it is not offered); `"required"`: call
      the offered tool that the last user message names, else the first offered one (a
      client's before Eonyx's); `"auto"` or absent: call a tool only when the last user
      message names an offered one by its exact name (Eonyx's own tools excepted); `"none"`:
      never. One call; its arguments are an instance of the tool's `parameters` with the
      message's `name=value` / `name: value` hints (`tests/fake_schema.py`).
    - After `role: "tool"` results (the last messages), answer "The tool said: <content>"
      unless the choice forces another call (named, or required with a tool not yet called).
    - `response_format` `json_schema`: the content is an instance of its schema (same hints);
      `json_object`: `{"answer": <the echo>}`.
    - Otherwise the echo.
    """
    body = request.body or {}
    said = last_user_text(body)
    hints = hints_in(said)
    tools = _offered(body)
    choice = body.get("tool_choice")
    results = _trailing_tool_results(body)
    named = _named_choice(choice)
    if named is not None:
        tool = next((t for t in tools if t.get("name") == named), None)
        if tool is None:
            return error(400, f"tool_choice names {named!r}, which is not in tools")
        return _call(tool, hints)
    if tools and choice == "required":
        called = _called_since_user(body)
        pool = [t for t in tools if t.get("name") not in called] if results else tools
        if pool:
            return _call(_mentioned(pool, said, EONYX_TOOLS) or _preferred(pool), hints)
    elif tools and choice in (None, "auto") and not results:
        tool = _mentioned([t for t in tools if t.get("name") not in EONYX_TOOLS], said)
        if tool is not None:
            return _call(tool, hints)
    return _text_answer(body, said, hints, results)


def _offered(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        tool["function"]
        for tool in body.get("tools") or []
        if isinstance(tool, dict) and isinstance(tool.get("function"), dict)
    ]


def _named_choice(choice: Any) -> str | None:
    if isinstance(choice, dict):
        function = choice.get("function")
        if isinstance(function, dict) and function.get("name"):
            return str(function["name"])
        if choice.get("name"):  # the Responses API's flat shape
            return str(choice["name"])
    return None


def _mentioned(
    tools: list[dict[str, Any]], said: str, skip: frozenset[str] = frozenset()
) -> dict[str, Any] | None:
    """The offered tool whose exact name comes first in the message, if any."""
    found: list[tuple[int, dict[str, Any]]] = []
    for tool in tools:
        name = str(tool.get("name") or "")
        match = re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", said) if name else None
        if match and name not in skip:
            found.append((match.start(), tool))
    return min(found, key=lambda pair: pair[0])[1] if found else None


def _preferred(tools: list[dict[str, Any]]) -> dict[str, Any]:
    return next((t for t in tools if t.get("name") not in EONYX_TOOLS), tools[0])


def _call(tool: dict[str, Any], hints: dict[str, str]) -> Reply:
    arguments = instance(tool.get("parameters") or {"type": "object"}, hints)
    return tool_calls(tool_call(str(tool["name"]), arguments))


def _trailing_tool_results(body: dict[str, Any]) -> list[str]:
    results: list[str] = []
    for message in reversed(body.get("messages") or []):
        if message.get("role") != "tool":
            break
        results.insert(0, _content_text(message.get("content")))
    return results


def _called_since_user(body: dict[str, Any]) -> set[str]:
    called: set[str] = set()
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            break
        for call in message.get("tool_calls") or []:
            called.add(str((call.get("function") or {}).get("name")))
    return called


def _content_text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content or "")


def _text_answer(
    body: dict[str, Any], said: str, hints: dict[str, str], results: list[str]
) -> Reply:
    answer = "The tool said: " + "\n".join(results) if results else said
    response_format = body.get("response_format")
    if isinstance(response_format, dict):
        if response_format.get("type") == "json_schema":
            schema = (response_format.get("json_schema") or {}).get("schema") or {}
            return text(json.dumps(instance(schema, hints)))
        if response_format.get("type") == "json_object":
            return text(json.dumps({"answer": answer}))
    return text(answer)


class _Handler(WSGIRequestHandler):
    protocol_version = "HTTP/1.1"  # so streamed bodies are chunked

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        pass  # quiet: the test reads `requests` instead


class FakeLLM:
    """The server. `start()` it (or use the `fake_llm` fixture), `stop()` it when done."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._lock = threading.Lock()
        self._script: deque[Reply] = deque()
        self._log: list[RecordedRequest] = []
        self._default: Callable[[RecordedRequest], Reply] = model_answer
        self._stopping = threading.Event()
        self.errors: list[str] = []  # tracebacks of the fake's own failures
        self._server: BaseWSGIServer = make_server(
            host, port, self._app, threaded=True, request_handler=_Handler
        )
        self._server.daemon_threads = False  # so stopping joins the handler threads
        self._thread: threading.Thread | None = None

    # -- life --

    @property
    def port(self) -> int:
        return self._server.server_port

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> FakeLLM:
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.01},
            name=f"fake-llm-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; scripted delays end at once; waits for the handler threads."""
        self._stopping.set()
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=10)
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> FakeLLM:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- what tests use --

    def script(self, *replies: Reply | str) -> None:
        """Queue replies, served in order, each once (a str is a plain text answer)."""
        with self._lock:
            self._script.extend(text(r) if isinstance(r, str) else r for r in replies)

    def set_default(self, answer: Callable[[RecordedRequest], Reply] | None) -> None:
        """What to answer once the script is used up (None: `model_answer`)."""
        with self._lock:
            self._default = answer or model_answer

    @property
    def pending(self) -> int:
        """Scripted replies not served yet."""
        with self._lock:
            return len(self._script)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, oldest first."""
        with self._lock:
            return list(self._log)

    @property
    def completions(self) -> list[RecordedRequest]:
        """The chat completion requests received so far."""
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    @property
    def last_request(self) -> RecordedRequest:
        with self._lock:
            return self._log[-1]

    def clear(self) -> None:
        """Forget the log and the remaining script."""
        with self._lock:
            self._log.clear()
            self._script.clear()

    def offering(
        self,
        id: str = "fake",
        *,
        api_key: str | None = None,
        model: str = FAKE_MODEL,
        context_window: int | None = 8192,
        max_output_tokens: int | None = None,
    ) -> Offering:
        return Offering(
            id=id,
            base_url=self.base_url,
            model=model,
            api_key=api_key,
            context_window=context_window,
            max_output_tokens=max_output_tokens,
        )

    # -- the WSGI app --

    def _app(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        try:
            response = self._respond(Request(environ), environ)
        except Exception:  # noqa: BLE001 - whatever broke is sent back to the test
            trace = traceback.format_exc()
            with self._lock:
                self.errors.append(trace)
            response = Response(
                json.dumps({"error": {"message": f"the fake LLM crashed:\n{trace}"}}),
                status=500,
                mimetype="application/json",
            )
        return response(environ, start_response)

    def _respond(self, request: Request, environ: dict[str, Any]) -> Response:
        raw = request.get_data()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        recorded = RecordedRequest(
            method=request.method,
            path=request.path,
            headers={name.lower(): value for name, value in request.headers.items()},
            body=body,
            at=time.monotonic(),
        )
        with self._lock:
            self._log.append(recorded)
        if request.path.endswith("/models") and request.method == "GET":
            return _json({"object": "list", "data": [{"id": FAKE_MODEL, "object": "model"}]})
        if not request.path.endswith("/chat/completions") or request.method != "POST":
            return _json({"error": {"message": f"no route {request.path}"}}, status=404)
        if not isinstance(body, dict) or "messages" not in body:
            return _json({"error": {"message": "the body needs messages"}}, status=400)

        with self._lock:
            reply = self._script.popleft() if self._script else None
            default = self._default
        if reply is None:
            reply = default(recorded)
        if reply.delay and self._stopping.wait(reply.delay):
            return _json({"error": {"message": "the fake LLM is stopping"}}, status=503)
        if reply.status >= 400 or reply.body is not None:
            return _error_response(reply)
        model = body.get("model") or FAKE_MODEL
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            events = self._sse(reply, model, body, include_usage, environ["werkzeug.socket"])
            return Response(
                events, status=reply.status, headers=reply.headers, mimetype="text/event-stream"
            )
        return _json(_completion(reply, model, body), status=reply.status, headers=reply.headers)

    def _sse(
        self,
        reply: Reply,
        model: str,
        body: dict[str, Any],
        include_usage: bool,
        connection: socket.socket,
    ) -> Iterator[bytes]:
        for sent, event in enumerate(_chunks(reply, model, body, include_usage)):
            if reply.die_after is not None and sent >= reply.die_after:
                # Drop the connection mid-body: the client sees no end of the chunked body.
                connection.shutdown(socket.SHUT_RDWR)
                return
            if sent and reply.chunk_delay and self._stopping.wait(reply.chunk_delay):
                return
            yield f"data: {event}\n\n".encode()


def _json(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(json.dumps(data), status=status, headers=headers, mimetype="application/json")


def _error_response(reply: Reply) -> Response:
    if isinstance(reply.body, str):
        return Response(reply.body, status=reply.status, headers=reply.headers)
    return _json(reply.body if reply.body is not None else {}, reply.status, reply.headers)


def _finish_reason(reply: Reply) -> str:
    return reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")


def _usage(reply: Reply, body: dict[str, Any]) -> dict[str, int]:
    if reply.usage is not None:
        return reply.usage
    prompt = len(json.dumps(body.get("messages") or [])) // 4 + 1
    answer = len(reply.content or "") // 4 + len(json.dumps(reply.tool_calls)) // 4 + 1
    return {"prompt_tokens": prompt, "completion_tokens": answer, "total_tokens": prompt + answer}


def _completion(reply: Reply, model: str, body: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.tool_calls:
        message["tool_calls"] = reply.tool_calls
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": _finish_reason(reply)}],
        "usage": _usage(reply, body),
    }


def _pieces(value: str, size: int) -> list[str]:
    size = max(1, size)
    return [value[i : i + size] for i in range(0, len(value), size)]


def _chunks(reply: Reply, model: str, body: dict[str, Any], include_usage: bool) -> Iterator[str]:
    """The SSE `data` payloads of a streamed answer, ending with [DONE]."""
    base = {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
    }

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
        return json.dumps({**base, "choices": [choice]})

    yield chunk({"role": "assistant", "content": ""})
    for piece in _pieces(reply.content or "", reply.chunk_size):
        yield chunk({"content": piece})
    for index, call in enumerate(reply.tool_calls):
        function = call["function"]
        head = {"index": index, "id": call["id"], "type": "function"}
        yield chunk(
            {"tool_calls": [{**head, "function": {"name": function["name"], "arguments": ""}}]}
        )
        for piece in _pieces(function["arguments"], reply.chunk_size):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, _finish_reason(reply))
    if include_usage:
        yield json.dumps({**base, "choices": [], "usage": _usage(reply, body)})
    yield "[DONE]"


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    """A started fake model server, stopped after the test; fails the test if it crashed."""
    server = FakeLLM().start()
    try:
        yield server
    finally:
        server.stop()
    assert not server.errors, "the fake LLM failed:\n" + "\n".join(server.errors)
