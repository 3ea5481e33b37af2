"""A Chat Completions request as the facade reads it: every parameter and tool a client
sends is honoured, ignored by name, or refused with a 400 naming it (issue 41).

Honoured, sent to the model as given (`FORWARDED`): sampling and length parameters, stop
sequences, `response_format`, function `tools`, `tool_choice`, `parallel_tool_calls`, `user`
and the like. Read by Eonyx itself: `stream`, `stream_options.include_usage`, `store` (it
keeps no stored completions; the conversation is a session all the same), `metadata` (kept
with the answer), `n: 1` and `logprobs: false`. Refused (`REFUSED`): only what would change
the meaning of the answer (`n` above 1, log probabilities, audio, predicted outputs, the
retired `functions`). Anything else, and tools of a type the model cannot run, is accepted
and ignored: clients send fields of their next release, and refusing them breaks the client.
What was ignored is named in `ChatRequest.ignored` (the `X-Eonyx-Ignored` header).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from shared.core import text
from shared.core.errors import InvalidInput
from shared.core.messages import tool_call_problem

ROLES = ("system", "developer", "user", "assistant", "tool")
INSTRUCTION_ROLES = ("system", "developer")
FORWARDED = (
    "temperature",
    "top_p",
    "max_tokens",
    "max_completion_tokens",
    "stop",
    "seed",
    "presence_penalty",
    "frequency_penalty",
    "response_format",
    "tool_choice",
    "parallel_tool_calls",
    "logit_bias",
    "reasoning_effort",
    "user",
)
READ = ("model", "messages", "stream", "stream_options", "tools", "store", "metadata")
REFUSED: dict[str, Callable[[Any], bool]] = {  # parameter -> whether a value is refused
    "n": lambda value: value not in (None, 1),
    "logprobs": lambda value: bool(value),
    "top_logprobs": lambda value: value is not None,
    "audio": lambda value: value is not None,
    "modalities": lambda value: value not in (None, ["text"]),
    "prediction": lambda value: value is not None,
    "functions": lambda value: value is not None,
    "function_call": lambda value: value is not None,
}
WHY_REFUSED = {
    "n": "Eonyx gives one answer per request (n must be 1)",
    "logprobs": "Eonyx does not return log probabilities",
    "top_logprobs": "Eonyx does not return log probabilities",
    "functions": "functions is retired; send tools instead",
    "function_call": "function_call is retired; send tool_choice instead",
}
TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
RESPONSE_FORMATS = ("text", "json_object", "json_schema")
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ChatRequest:
    """What a request asks: the client's instructions (its system and developer messages,
    in order), its other messages as sent, the model parameters to forward, its tools."""

    model: str
    messages: tuple[Mapping[str, Any], ...]
    instructions: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    tools: tuple[dict[str, Any], ...] = ()
    stream: bool = False
    include_usage: bool = False
    user: str | None = None
    metadata: Mapping[str, Any] | None = None
    ignored: tuple[str, ...] = ()  # what was accepted but not honoured, by name


def _refuse(message: str, param: str, code: str = "invalid_request") -> InvalidInput:
    return InvalidInput(message, code=code, param=param)


def text_of(content: Any, where: str) -> str:
    """The text of a content given as a string or as text parts (instructions, tool
    results); InvalidInput for anything else."""
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list):
        texts = []
        for number, part in enumerate(content):
            if not isinstance(part, Mapping) or part.get("type") != "text":
                raise _refuse(f"{where}.content[{number}] must be a text part", where)
            texts.append(str(part.get("text") or ""))
        return "\n".join(texts)
    raise _refuse(f"{where}.content must be a string or a list of parts", where)


def _check_message(message: Any, number: int) -> None:
    where = f"messages[{number}]"
    if not isinstance(message, Mapping):
        raise _refuse(f"{where} must be an object", where)
    role = message.get("role")
    if role == "function":
        raise _refuse(f"{where}: role 'function' is retired; send role 'tool'", where)
    if role not in ROLES:
        raise _refuse(f"{where}.role must be one of {', '.join(ROLES)}", where)
    content = message.get("content")
    if role == "user":
        if not isinstance(content, str | list):
            raise _refuse(f"{where}.content must be a string or a list of parts", where)
        return
    if role == "assistant":
        calls = message.get("tool_calls")
        if calls is not None and not isinstance(calls, list):
            raise _refuse(f"{where}.tool_calls must be a list of function calls", where)
        for number, call in enumerate(calls or ()):
            problem = tool_call_problem(call)
            if problem is not None:
                raise _refuse(f"{where}.tool_calls[{number}] {problem}", where)
        if content is None and not calls:
            raise _refuse(f"{where} has neither content nor tool_calls", where)
    if role == "tool" and not isinstance(message.get("tool_call_id"), str):
        raise _refuse(f"{where} needs the tool_call_id of the call it answers", where)
    text_of(content, where)


def _runnable(tools: Any, ignored: list[str]) -> list[Any]:
    """The tools the model can run: those of another type (hosted ones such as
    `web_search`) are dropped and named in `ignored`."""
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise _refuse("tools must be a list", "tools")
    kept = []
    for tool in tools:
        kind = tool.get("type") if isinstance(tool, Mapping) else None
        if isinstance(kind, str) and kind != "function":
            ignored.append(f"tools[{kind}]")
        else:
            kept.append(tool)
    return kept


def _check_tools(tools: list[Any]) -> tuple[dict[str, Any], ...]:
    names: set[str] = set()
    for number, tool in enumerate(tools):
        where = f"tools[{number}]"
        function = tool.get("function") if isinstance(tool, Mapping) else None
        if not isinstance(tool, Mapping) or tool.get("type") != "function" or not function:
            raise _refuse(f"{where} must be {{type: function, function: {{name, ...}}}}", where)
        name = function.get("name") if isinstance(function, Mapping) else None
        if not isinstance(name, str) or not TOOL_NAME.match(name):
            raise _refuse(f"{where}.function.name must be 1-64 letters, digits, _ or -", where)
        if name in names:
            raise _refuse(f"{where}: the tool {name!r} is given twice", where)
        names.add(name)
    return tuple(dict(tool) for tool in tools)


def _check_tool_choice(choice: Any, tools: Sequence[Mapping[str, Any]]) -> None:
    if choice is None or choice in ("none", "auto", "required"):
        return
    names = {tool["function"]["name"] for tool in tools}
    function = choice.get("function") if isinstance(choice, Mapping) else None
    name = function.get("name") if isinstance(function, Mapping) else None
    if not isinstance(name, str):
        raise _refuse(
            "tool_choice must be none, auto, required or {type: function, function: {name}}",
            "tool_choice",
        )
    if name not in names:
        raise _refuse(f"tool_choice names {name!r}, which is not in tools", "tool_choice")


def _check_response_format(value: Any) -> None:
    if value is None:
        return
    if not isinstance(value, Mapping) or value.get("type") not in RESPONSE_FORMATS:
        raise _refuse(
            "response_format.type must be one of " + ", ".join(RESPONSE_FORMATS),
            "response_format",
        )
    if value["type"] == "json_schema" and not isinstance(value.get("json_schema"), Mapping):
        raise _refuse("response_format json_schema needs a json_schema object", "response_format")


def check_encodable(body: Mapping[str, Any]) -> None:
    """InvalidInput naming the first field that holds a lone surrogate: such a string can be
    neither saved, hashed nor sent to a model (UTF-8 cannot carry it)."""
    where = text.surrogate_in(body)
    if where is not None:
        param = where.split(".")[0] or None
        raise InvalidInput(
            f"{where} contains a lone surrogate, which is not valid Unicode",
            code="invalid_text",
            param=param,
        )


def read_chat_request(body: Mapping[str, Any], ignored: Sequence[str] = ()) -> ChatRequest:
    """The request in `body`, or InvalidInput naming the parameter or message at fault;
    `ignored` is what a caller (the Responses reading) already set aside."""
    check_encodable(body)
    unused = [*ignored, *(n for n in body if n not in (*FORWARDED, *READ, *REFUSED))]
    for name, refused in REFUSED.items():
        if name in body and refused(body[name]):
            why = WHY_REFUSED.get(name, f"Eonyx does not support {name}")
            raise _refuse(why, name, "unsupported_parameter")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _refuse("messages must not be empty", "messages")
    for number, message in enumerate(messages):
        _check_message(message, number)
    # A system or developer message after the turn's (aider's reminders) is an instruction
    # for this turn, as OpenAI takes it: what the turn answers is the last other message.
    turn = [m for m in messages if m["role"] not in INSTRUCTION_ROLES]
    if not turn or turn[-1]["role"] not in ("user", "tool"):
        raise _refuse(
            "the last message must be the user's or a tool's result: it is the turn", "messages"
        )
    tools = _check_tools(_runnable(body.get("tools"), unused))
    _check_tool_choice(body.get("tool_choice"), tools)
    _check_response_format(body.get("response_format"))
    instructions = [
        text_of(m.get("content"), "messages").strip()
        for m in messages
        if m["role"] in INSTRUCTION_ROLES
    ]
    stream_options = body.get("stream_options") or {}
    user = body.get("user")
    if unused:
        log.debug("accepted but not honoured: %s", ", ".join(unused))
    return ChatRequest(
        model=body["model"],
        messages=tuple(m for m in messages if m["role"] not in INSTRUCTION_ROLES),
        instructions="\n\n".join(text for text in instructions if text) or None,
        options={name: body[name] for name in FORWARDED if body.get(name) is not None},
        tools=tools,
        stream=bool(body.get("stream")),
        include_usage=bool(stream_options.get("include_usage")),
        user=user if isinstance(user, str) else None,
        metadata=body.get("metadata"),
        ignored=tuple(sorted(set(unused))),  # sorted: the body's key order is not kept
    )
