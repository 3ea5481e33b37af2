"""The Responses API's domain (`POST /v1/responses`): a request read into the facade's
Chat Completions form, so that sessions, tools, formats and refusals follow the same rules
(shared/integrations/facade.py, openai_request.py); and the responses kept for
`previous_response_id` and `GET /v1/responses/<id>`.

Input items map onto chat messages: a message item by its role (system and developer ones
are the client's instructions, after `instructions`), `function_call` items onto the tool
calls of the assistant message they follow, `function_call_output` onto tool results.
`reasoning` items carry nothing a chat model reads and are passed over, as are items of a
type Eonyx does not know (a client's newer kinds), named as ignored. Function tools,
`tool_choice`, `text.format` and the sampling parameters become their chat forms (tools:
shared/integrations/response_tools.py). What cannot be honoured (`include` items,
`prompt_cache_key`, `client_metadata`, `reasoning.summary`, hosted tools, fields unknown to
Eonyx) is accepted and named in `ChatRequest.ignored`, so that a client's next release still
connects (issue 41).

`previous_response_id` continues that response's session (the id -> session mapping is kept
in the database, for the responses that were stored). `store: false` only means that: the
response is not kept, yet the conversation is a listed session with memory; a temporary one
is asked for with `X-Eonyx-Temporary`.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from sqlalchemy import Table, bindparam, insert, select

from shared.accounts.people import Principal
from shared.chat.turns import TurnResult
from shared.core.clock import utcnow
from shared.core.errors import InvalidInput, NotFound
from shared.core.messages import image_part, text_part
from shared.db.orm import ApiResponse
from shared.integrations import bindings, facade
from shared.integrations.facade import FacadeRun, PlannedTurn
from shared.integrations.needs import IntegrationsRuntime
from shared.integrations.openai_request import ChatRequest, check_encodable, read_chat_request
from shared.integrations.response_object import finished, item_id, skeleton
from shared.integrations.response_tools import ResponseTools, flat_name, read_tools, restore

# Responses field -> Chat Completions field, for the fields that only change their name.
RENAMED = {"max_output_tokens": "max_tokens"}
SAME = ("model", "temperature", "top_p", "parallel_tool_calls", "user", "metadata")
READ = ("input", "instructions", "previous_response_id", "stream", "tools", "tool_choice")
READ_HERE = ("store", "truncation", "stream_options")  # honoured without a chat counterpart
REASONING_READ = ("effort",)  # forwarded as reasoning_effort; any other setting is ignored
PART_TEXT_TYPES = ("input_text", "output_text", "text", "refusal")
_TABLE = cast(Table, ApiResponse.__table__)
# Built once: building a statement costs as much as running it on SQLite.
_KEPT = {
    column: select(_TABLE.c[column]).where(
        _TABLE.c.id == bindparam("id"), _TABLE.c.user_id == bindparam("user_id")
    )
    for column in ("session_id", "body")
}
_KEEP = insert(_TABLE)


def new_response_id() -> str:
    return "resp_" + secrets.token_hex(16)


RESPONSE_ID_RE = re.compile(r"^resp_[0-9a-f]{32}$")


def _refuse(message: str, param: str, code: str = "invalid_request") -> InvalidInput:
    return InvalidInput(message, code=code, param=param)


def _content(content: Any, where: str) -> str | list[dict[str, Any]]:
    """A message item's content in chat form: text, or text and image_url parts."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise _refuse(f"{where}.content must be a string or a list of parts", where)
    parts: list[dict[str, Any]] = []
    for number, part in enumerate(content):
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind in PART_TEXT_TYPES:
            parts.append(text_part(part.get("text") or part.get("refusal") or ""))
        elif kind == "input_image" and isinstance(part.get("image_url"), str):
            parts.append(image_part(part["image_url"]))
        else:
            raise _refuse(
                f"{where}.content[{number}]: parts of type {kind!r} are not supported "
                "(input_text, output_text and input_image with an image_url are)",
                where,
            )
    if all(part["type"] == "text" for part in parts):
        return "\n".join(part["text"] for part in parts)
    return parts


def _messages(items: Any, ignored: list[str]) -> list[dict[str, Any]]:
    """The input items as chat messages (see the module docstring); the types of the items
    passed over, other than reasoning, are added to `ignored`."""
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    if not isinstance(items, list) or not items:
        raise _refuse("input must be a string or a non-empty list of items", "input")
    messages: list[dict[str, Any]] = []
    for number, item in enumerate(items):
        where = f"input[{number}]"
        if not isinstance(item, Mapping):
            raise _refuse(f"{where} must be an object", where)
        kind = item.get("type", "message")
        if kind == "message":
            content = _content(item.get("content"), where)
            messages.append({"role": item.get("role"), "content": content})
        elif kind == "function_call":
            name = flat_name(item.get("namespace"), item.get("name"))
            call = {
                "id": item.get("call_id"),
                "type": "function",
                "function": {"name": name, "arguments": item.get("arguments") or ""},
            }
            last = messages[-1] if messages else None
            if (
                last is not None
                and last["role"] == "assistant"
                and isinstance(last.get("content"), str | None)
            ):
                last.setdefault("tool_calls", []).append(call)
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            output = item.get("output")
            content = output if isinstance(output, str) else _content(output, where)
            messages.append(
                {"role": "tool", "tool_call_id": item.get("call_id"), "content": content}
            )
        elif kind != "reasoning":
            ignored.append(f"input[{kind}]")
    if not messages:
        raise _refuse("input holds no message, tool call or tool result to answer", "input")
    return messages


def _tool_choice(choice: Any, tools: ResponseTools) -> Any:
    if choice is None or isinstance(choice, str):
        return choice
    if isinstance(choice, Mapping) and choice.get("type") == "function":
        name = tools.chosen(choice.get("namespace"), choice.get("name"))
        return {"type": "function", "function": {"name": name}}
    raise _refuse("tool_choice must be none, auto, required or a function", "tool_choice")


def _response_format(text: Any) -> dict[str, Any] | None:
    form = text.get("format") if isinstance(text, Mapping) else None
    if form is None or form.get("type") == "text":
        return None
    if form.get("type") == "json_schema":
        keys = ("name", "schema", "strict", "description")
        return {"type": "json_schema", "json_schema": {k: form[k] for k in keys if k in form}}
    return dict(form)


def _ignored(body: Mapping[str, Any]) -> list[str]:
    """The fields accepted but not honoured: those with no meaning for Eonyx, `include`
    items and `reasoning` settings other than its effort."""
    known = (*RENAMED, *SAME, *READ, *READ_HERE, "text", "reasoning")
    ignored = [name for name in body if name not in known and body[name] is not None]
    reasoning = body.get("reasoning")
    if isinstance(reasoning, Mapping):
        ignored += [f"reasoning.{k}" for k in reasoning if k not in REASONING_READ]
    return ignored


def read_responses_request(
    body: Mapping[str, Any],
) -> tuple[ChatRequest, str | None, ResponseTools]:
    """(the request in chat form, its previous_response_id, its tools as read), or
    InvalidInput naming the field at fault."""
    check_encodable(body)
    chat: dict[str, Any] = {name: body[name] for name in SAME if name in body}
    chat |= {RENAMED[name]: body[name] for name in RENAMED if name in body}
    if "text" in body:
        chat["response_format"] = _response_format(body["text"])
    reasoning = body.get("reasoning")
    effort = reasoning.get("effort") if isinstance(reasoning, Mapping) else None
    if effort:
        chat["reasoning_effort"] = effort
    tools = read_tools(body.get("tools"))
    instructions = body.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise _refuse("instructions must be a string", "instructions")
    passed_over: list[str] = []
    messages = _messages(body.get("input"), passed_over)
    if instructions:
        messages.insert(0, {"role": "system", "content": instructions})
    chat |= {
        "messages": messages,
        "tools": tools.chat if isinstance(body.get("tools"), list) else body.get("tools"),
        "tool_choice": _tool_choice(body.get("tool_choice"), tools),
        "stream": bool(body.get("stream")),
        # a stream's last event carries the usage: ask the model for it
        "stream_options": {"include_usage": True} if body.get("stream") else None,
    }
    previous = body.get("previous_response_id")
    if previous is not None and not isinstance(previous, str):
        raise _refuse("previous_response_id must be a string", "previous_response_id")
    given = {k: v for k, v in chat.items() if v is not None}
    ignored = [*_ignored(body), *tools.ignored, *passed_over]
    return read_chat_request(given, ignored), previous, tools


def _kept(
    rt: IntegrationsRuntime, principal: Principal, response_id: str, column: str
) -> str | None:
    """A column of a stored response of the caller's (Core: one read on every request
    that continues a response)."""
    where = {"id": response_id, "user_id": principal.user_id}
    with rt.db.transaction() as db:
        value: str | None = db.execute(_KEPT[column], where).scalar()
        return value


def session_of(rt: IntegrationsRuntime, principal: Principal, response_id: str) -> str:
    """The session a stored response of the caller's was given in; NotFound otherwise."""
    session_id = _kept(rt, principal, response_id, "session_id")
    if session_id is None:
        raise NotFound(
            f"no response {response_id!r}",
            code="previous_response_not_found",
            param="previous_response_id",
        )
    return session_id


def keep(
    rt: IntegrationsRuntime,
    principal: Principal,
    planned: PlannedTurn,
    result: TurnResult,
    response: Mapping[str, Any],
) -> None:
    """Bind the session's new head (as `facade.remember` does) and keep the response unless
    it was asked not to be stored, in one transaction."""
    session_id = result.session_id
    with rt.db.transaction() as db:
        for key in planned.keys(result):
            bindings.bind_in(db, principal.user_id, facade.CHANNEL, key, session_id)
        if response.get("store") is False:
            return
        row = {
            "id": response["id"],
            "user_id": principal.user_id,
            "session_id": session_id,
            "body": json.dumps(response, ensure_ascii=False),
            "created_at": utcnow(),
        }
        db.execute(_KEEP, [row])


@dataclass
class ResponseRun:
    """A Responses request under way: the response as it starts, the id of its message
    item, and its turn; `answer` is the finished response, kept, once the turn answered."""

    response: dict[str, Any]
    message_id: str
    turn: FacadeRun = field(default_factory=lambda: FacadeRun(""))
    answer: dict[str, Any] | None = None
    ignored: tuple[str, ...] = ()  # accepted but not honoured (the X-Eonyx-Ignored header)


def run_response(
    rt: IntegrationsRuntime,
    principal: Principal,
    body: Mapping[str, Any],
    header: str | None,
    *,
    temporary: bool,
) -> ResponseRun:
    """Read the request, choose its session (`previous_response_id`'s, the header's, or a
    new one), run its turn, and keep the finished response once it is answered."""
    chat, previous, tools = read_responses_request(body)
    session = session_of(rt, principal, previous) if previous else header
    run = ResponseRun(skeleton(new_response_id(), body, chat.model), item_id("msg"))
    run.ignored = chat.ignored

    def done(planned: PlannedTurn, result: TurnResult) -> None:
        run.answer = finished(run.response, result, run.message_id)
        restore(run.answer["output"], tools.namespaces)
        keep(rt, principal, planned, result, run.answer)

    run.turn = facade.run_chat(rt, principal, chat, session, temporary=temporary, done=done)
    return run


def stored(rt: IntegrationsRuntime, principal: Principal, response_id: str) -> dict[str, Any]:
    """A stored response of the caller's, as it was sent; NotFound otherwise."""
    body = _kept(rt, principal, response_id, "body")
    if body is None:
        raise NotFound(f"no response {response_id!r}", code="response_not_found")
    data: dict[str, Any] = json.loads(body)
    return data
