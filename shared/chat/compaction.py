"""Auto-summarization planning: token estimates, the 80% trigger, the compaction boundary.

This module owns *deciding* what to compact and *shaping* the data around it. It is pure:
no disk, no network, no LLM call, and it never modifies the records it is given. The caller
(the chat-turn endpoint or a worker) runs the summarization model and stores the result.

The rules (spec, "Auto-summarization"):

- Only a model with a `context_window` is compacted (`window=None` switches it off).
- Size is estimated at ~4 characters per token (`CHARS_PER_TOKEN`) over the system prompt,
  message contents, and tool calls' names and arguments.
- At `THRESHOLD` (80%) of the window, everything older than the last `KEEP_USER_TURNS` (3)
  user turns is summarized into a running summary (decisions, facts, changed files, open
  tasks) that integrates the previous summary.
- A turn starts at a user message and the boundary is only ever placed at a user message, so
  an assistant tool call and its tool result are never separated. If a malformed history has
  a tool result after a later user message than its call, the boundary moves further back
  until no pair straddles it.
- The summary goes into the system prompt (`shared.chat.prompt`), and the model then sees only the
  messages after the boundary. The JSONL keeps the full history: nothing here touches it.

The summary state, stored by the caller beside the session's JSONL (derived data, never in
the transcript), is `SummaryState.to_dict()`:

    {"summary": "<text>",                 # the running summary
     "covered_through": "<message id>",   # id of the last message the summary covers
     "created_at": "2026-07-05T09:15:00Z"}  # when it was produced (ISO 8601 UTC)

A state whose `covered_through` id is no longer in the session (after a clear, say) is stale
and must be ignored: `current_summary` returns None for it and `apply_summary` then returns
every message.

Typical turn:

    state = current_summary(records, stored_state)
    prompt = build_system_prompt(..., summary=state.summary if state else None, ...)
    plan = plan_compaction(records, system_prompt=prompt, window=window,
                           previous_summary=state.summary if state else None,
                           summarized_upto=state.covered_through if state else None)
    if plan:
        state = SummaryState.from_plan(plan, llm(summary_request(plan)))  # store it
        prompt = build_system_prompt(..., summary=state.summary, ...)
    model_messages = apply_summary(records, state)
    usage = context_usage(prompt, model_messages, window)

A turn does the last two from what the session state computed when it read each record:
`start = summary_start(records, state)`, then `sized_usage(prompt, sizes[start:], window)`
and the records' encoded forms from `start` on (shared/chat/turns.py).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypedDict

from shared.core.messages import (
    JobMessage,
    content_text,
    is_model_message,
    job_prompt,
    message_chars,
    model_message,
    text_part,
    tool_call_parts,
)

CHARS_PER_TOKEN = 4
THRESHOLD = 0.8
_THRESHOLD_PCT = round(THRESHOLD * 100)
KEEP_USER_TURNS = 3
MAX_TRANSCRIPT_TOOL_RESULT_CHARS = 4000
MAX_TRANSCRIPT_ARGUMENT_CHARS = 2000

Record = Mapping[str, Any]

SUMMARIZER_INSTRUCTIONS = """\
You maintain the running summary of a long conversation between a user and an AI assistant \
(Eonyx). Older parts of the conversation are removed from the assistant's context and your \
summary is all the assistant will know about them, so keep everything it needs to continue \
the work seamlessly.

Write the updated summary in the same language as the conversation, as Markdown with these \
sections (omit a section only when there is nothing for it):

## Decisions
What was decided or agreed, and why when the reason matters.
## Facts
Facts learned: about the user's goals and constraints, the project, names, versions, \
commands, values, errors and their causes.
## Changed files
Files created, edited or deleted, with what changed in each.
## Open tasks
What is still to do, unresolved questions and promised follow-ups.

Integrate the previous summary: keep what is still true, update what changed, drop what was \
superseded or finished (move finished tasks out of Open tasks). Be concise and concrete; \
prefer exact names, paths and numbers over vague description. Do not address the user, do \
not continue the conversation, and output only the summary."""


class UsageView(TypedDict):
    tokens: int
    window: int | None
    percent: float | None


@dataclass(frozen=True)
class Usage:
    """The context estimate: `percent` (0-100, one decimal) is None without a window."""

    tokens: int
    window: int | None
    percent: float | None

    @property
    def over_threshold(self) -> bool:
        # integer percent arithmetic: 0.8 * 15 is 12.000000000000002 in floating point
        return self.window is not None and self.tokens * 100 >= _THRESHOLD_PCT * self.window

    def to_dict(self) -> UsageView:
        return {"tokens": self.tokens, "window": self.window, "percent": self.percent}


@dataclass(frozen=True)
class CompactionPlan:
    """What one compaction does.

    `to_summarize`: records older than the boundary and not yet covered by the previous
    summary, oldest first. `kept`: records from the boundary on (they start with a user
    message). `covered_through`: id of the last record in `to_summarize`, i.e. what the new
    summary will cover through. `usage`: the estimate that triggered the plan.
    """

    to_summarize: tuple[Record, ...]
    kept: tuple[Record, ...]
    previous_summary: str | None
    covered_through: str
    usage: Usage


@dataclass(frozen=True)
class SummaryState:
    """The compaction result kept beside a session (see the module docstring)."""

    summary: str
    covered_through: str
    created_at: str

    @classmethod
    def from_plan(
        cls, plan: CompactionPlan, summary: str, *, now: datetime | None = None
    ) -> SummaryState:
        moment = (now or datetime.now(UTC)).astimezone(UTC)
        stamp = moment.isoformat().replace("+00:00", "Z")
        return cls(summary=summary.strip(), covered_through=plan.covered_through, created_at=stamp)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SummaryState:
        summary, through = data.get("summary"), data.get("covered_through")
        created = data.get("created_at")
        if not isinstance(summary, str) or not isinstance(through, str) or not through:
            raise ValueError("a summary state needs a summary and a covered_through id")
        return cls(summary=summary, covered_through=through, created_at=str(created or ""))

    def to_dict(self) -> dict[str, str]:
        return {
            "summary": self.summary,
            "covered_through": self.covered_through,
            "created_at": self.created_at,
        }


SummaryLike = SummaryState | Mapping[str, Any]


def _chars(value: str | Iterable[Record] | None) -> int:
    if value is None:
        return 0
    if isinstance(value, str):
        return len(value)
    return sum(message_chars(message) for message in value)


def estimate_tokens(value: str | Iterable[Record] | None) -> int:
    """~4 characters per token of a text, or of messages (records or model messages): their
    content (text parts only) plus tool calls' names and arguments. Rounded up."""
    return math.ceil(_chars(value) / CHARS_PER_TOKEN)


def context_usage(system_prompt: str, messages: Iterable[Record], window: int | None) -> Usage:
    """The estimate for a system prompt plus messages against a context window."""
    return _usage(len(system_prompt) + _chars(messages), window)


def sized_usage(system_prompt: str, sizes: Iterable[int], window: int | None) -> Usage:
    """`context_usage` from the messages' sizes (`SessionState.sizes`), measured before."""
    return _usage(len(system_prompt) + sum(sizes), window)


def _usage(chars: int, window: int | None) -> Usage:
    if window is not None and window <= 0:
        raise ValueError("a context window must be a positive number of tokens")
    tokens = math.ceil(chars / CHARS_PER_TOKEN)
    percent = None if window is None else round(100 * tokens / window, 1)
    return Usage(tokens=tokens, window=window, percent=percent)


def _position(records: Sequence[Record], message_id: str | None) -> int | None:
    """Where the last message with this id is in `records`, searched from the end: for a
    summary's boundary that costs the part of the history the summary does not cover, not
    the whole history."""
    if not message_id:
        return None
    for index in range(len(records) - 1, -1, -1):
        record = records[index]
        if record.get("id") == message_id and is_model_message(record):
            return index
    return None


def summary_start(records: Sequence[Record], summary_state: SummaryLike | None) -> int:
    """Where the messages the model is sent start: just after the message the summary covers
    through (0 without a summary, or with a stale one)."""
    index = _position(records, _covered(summary_state)[1])
    return 0 if index is None else index + 1


def _covered(summary_state: SummaryLike | None) -> tuple[str | None, str | None]:
    if summary_state is None:
        return None, None
    if isinstance(summary_state, SummaryState):
        return summary_state.summary, summary_state.covered_through
    return summary_state.get("summary"), summary_state.get("covered_through")


def current_summary(
    records: Sequence[Record], summary_state: SummaryLike | None
) -> SummaryState | None:
    """The stored state when it still applies to `records`; None when absent or stale (its
    `covered_through` message is gone, e.g. after a clear)."""
    if summary_state is None:
        return None
    state = (
        summary_state
        if isinstance(summary_state, SummaryState)
        else SummaryState.from_dict(summary_state)
    )
    if _position(records, state.covered_through) is None:
        return None
    return state


def _straddling_pairs(messages: Sequence[Record]) -> list[tuple[int, int]]:
    """(call index, result index) for every tool result and the assistant message that
    made its call."""
    call_at: dict[str, int] = {}
    pairs: list[tuple[int, int]] = []
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "assistant":
            for call in message.get("tool_calls") or ():
                if isinstance(call, Mapping) and isinstance(call.get("id"), str):
                    call_at[call["id"]] = index
        elif role == "tool":
            origin = call_at.get(message.get("tool_call_id") or "")
            if origin is not None:
                pairs.append((origin, index))
    return pairs


def find_boundary(messages: Sequence[Record], *, keep_user_turns: int = KEEP_USER_TURNS) -> int:
    """Index of the first kept message: the user message starting the `keep_user_turns`-th
    last turn, moved back while any tool call/result pair would straddle it. 0 when there is
    nothing older to summarize."""
    user_indices = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    if len(user_indices) < keep_user_turns or keep_user_turns <= 0:
        return 0
    pairs = _straddling_pairs(messages)
    for boundary in reversed(user_indices[: len(user_indices) - keep_user_turns + 1]):
        if not any(call < boundary <= result for call, result in pairs):
            return boundary
    return 0


def plan_compaction(
    messages: Sequence[Record],
    *,
    system_prompt: str,
    window: int | None,
    previous_summary: str | None,
    summarized_upto: str | None,
    sizes: Sequence[int] | None = None,
) -> CompactionPlan | None:
    """Decide whether to compact now and what.

    `messages`: the session's records (non-message records are ignored). `system_prompt`:
    the prompt as it would be sent now, current summary included. `summarized_upto`: the id
    of the last message the previous summary covers; the estimate and the new summary only
    consider messages after it, and only those are looked at (the search for it starts at
    the end). An id that is not in `messages` means the previous summary is stale: it is
    dropped and the whole history is considered. `sizes`, when given, is `message_chars` of
    each record (0 for one the model is not sent), computed once when the session was read.

    None when `window` is None, when usage is below `THRESHOLD` of the window, or when there
    is nothing older than the last `KEEP_USER_TURNS` user turns to summarize.
    """
    if window is None:
        return None
    covered = _position(messages, summarized_upto)
    if covered is None:
        previous_summary = None
    start = 0 if covered is None else covered + 1
    if sizes is not None and len(sizes) == len(messages):
        chars = sum(sizes[start:])
    else:
        chars = _chars(message for message in messages[start:] if is_model_message(message))
    usage = _usage(len(system_prompt) + chars, window)
    if not usage.over_threshold:
        return None
    live = [message for message in messages[start:] if is_model_message(message)]
    boundary = find_boundary(live)
    if boundary <= 0:
        return None
    to_summarize = tuple(live[:boundary])
    last_id = to_summarize[-1].get("id")
    if not isinstance(last_id, str) or not last_id:
        raise ValueError("session messages must carry an id to be compacted")
    return CompactionPlan(
        to_summarize=to_summarize,
        kept=tuple(live[boundary:]),
        previous_summary=previous_summary
        if previous_summary and previous_summary.strip()
        else None,
        covered_through=last_id,
        usage=usage,
    )


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[... {len(text) - limit} more characters omitted]"


def render_transcript(records: Iterable[Record]) -> str:
    """A plain-text transcript of records for the summarization model (long tool output and
    arguments clipped)."""
    names: dict[str, str] = {}
    lines: list[str] = []
    for record in records:
        if not is_model_message(record):
            continue
        role = record.get("role")
        text = content_text(record.get("content")).strip()
        if role == "user":
            lines.append(f"[user]\n{text}")
        elif role == "assistant":
            if text:
                lines.append(f"[assistant]\n{text}")
            for call in record.get("tool_calls") or ():
                name, arguments = tool_call_parts(call)
                if isinstance(call, Mapping) and isinstance(call.get("id"), str):
                    names[call["id"]] = name
                clipped = _clip(arguments, MAX_TRANSCRIPT_ARGUMENT_CHARS)
                lines.append(f"[assistant calls tool {name}]\n{clipped}")
        else:
            name = names.get(record.get("tool_call_id") or "", "?")
            lines.append(f"[tool result: {name}]\n{_clip(text, MAX_TRANSCRIPT_TOOL_RESULT_CHARS)}")
    return "\n\n".join(lines)


def summary_request(plan: CompactionPlan) -> list[JobMessage]:
    """OpenAI-style messages asking the summarization model for the new running summary."""
    previous = plan.previous_summary.strip() if plan.previous_summary else "(none yet)"
    user = (
        "<previous-summary>\n"
        f"{previous}\n"
        "</previous-summary>\n\n"
        "<conversation>\n"
        f"{render_transcript(plan.to_summarize)}\n"
        "</conversation>\n\n"
        "Write the updated running summary: the previous summary with the conversation above "
        "folded in (decisions, facts, changed files, open tasks)."
    )
    return job_prompt(SUMMARIZER_INSTRUCTIONS, user)


ImageParts = Callable[[Record], list[dict[str, Any]]]


def to_model_messages(
    records: Iterable[Record], *, image_parts: ImageParts | None = None
) -> list[dict[str, Any]]:
    """Session records as OpenAI chat messages (role, content, tool_calls, tool_call_id).

    Only user/assistant/tool message records are kept; ids, timestamps and other fields are
    dropped; tool calls are normalized to `{id, type: function, function: {name,
    arguments: <JSON text>}}`. The records are not modified (content parts are copied; text
    is shared, as strings cannot change). A user message's images (`images`, names of files
    the caller owns) become content parts after its text, as `image_parts(record)` gives
    them; without it they are left out.
    """
    out: list[dict[str, Any]] = []
    for record in records:
        if not is_model_message(record):
            continue
        message = model_message(record)
        if not isinstance(message["content"], str):  # parts: copied, so the caller may change them
            message["content"] = copy.deepcopy(message["content"])
        if record["role"] == "user" and record.get("images") and image_parts is not None:
            text = message["content"]
            parts = [text_part(text)] if isinstance(text, str) and text else []
            message["content"] = parts + image_parts(record)
        out.append(message)
    return out


def apply_summary(
    messages: Sequence[Record],
    summary_state: SummaryLike | None,
    *,
    image_parts: ImageParts | None = None,
) -> list[dict[str, Any]]:
    """The model messages to send after compaction: those after the state's
    `covered_through` message, or all of them without a (current) state (images only for
    those: a summarized message's images are not sent again)."""
    start = summary_start(messages, summary_state)
    return to_model_messages(messages[start:], image_parts=image_parts)
