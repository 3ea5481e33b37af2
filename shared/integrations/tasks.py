"""A front end's own tasks, which are not chats.

Open WebUI asks the model for a chat's title, tags, follow-up questions or search queries
with requests of its own: one user message that opens with `### Task:` and quotes the chat
inside `<chat_history>`. In a voice call it also asks for an emoji for each sentence spoken,
with a prompt of another shape (`EMOJI_OPENING`, then the sentence). Run as chats, each
would be a session of its own, listed beside the conversation it describes (one chat of
four turns listed eight sessions). They are answered here without a session: the model is
asked once with the request as sent, the user's token usage counts it, and nothing is
saved, remembered or listed.
FRONT_END_TASKS_AS_CHATS=true turns this off.
"""

from __future__ import annotations

from typing import Any

from shared.accounts.people import Principal
from shared.chat.compaction import Usage
from shared.chat.turns import TurnResult
from shared.core.messages import content_text, message_record
from shared.integrations.needs import IntegrationsRuntime
from shared.integrations.openai_request import ChatRequest
from shared.llm import access, models
from shared.llm.wire import UsageSum

TASK_OPENING = "### Task:"
CHAT_HISTORY = "<chat_history>"
EMOJI_OPENING = (
    "Your task is to reflect the speaker's likely facial expression through a fitting emoji."
)


def is_front_end_task(chat: ChatRequest) -> bool:
    """A task prompt of a front end's (see the module), with no tools of the client's."""
    last = chat.messages[-1] if chat.messages else None
    if last is None or last.get("role") != "user" or chat.tools:
        return False
    text = content_text(last.get("content")).lstrip()
    quotes_the_chat = text.startswith(TASK_OPENING) and CHAT_HISTORY in text
    return quotes_the_chat or text.startswith(EMOJI_OPENING)


def run_task(rt: IntegrationsRuntime, principal: Principal, chat: ChatRequest) -> TurnResult:
    """The model's answer to a task, as a turn's result that no session holds."""
    rt.usage.check(principal.user_id)  # 429 budget_exceeded
    offering = models.offering_named(rt, chat.model)
    access.check(rt, principal, chat.model)
    instructions = [{"role": "system", "content": chat.instructions}] if chat.instructions else []
    messages: list[dict[str, Any]] = [
        *instructions,
        *({"role": m["role"], "content": content_text(m.get("content"))} for m in chat.messages),
    ]
    completion = rt.llm.complete(
        offering, messages, options=chat.options, user_id=principal.user_id
    )
    counts = UsageSum()
    counts.add(completion.usage)
    answer = message_record("assistant", completion.content or "", offering=offering.id)
    return TurnResult(
        "",
        chat.messages[-1],
        answer,
        [],
        Usage(0, None, None),
        finish_reason=completion.finish_reason or "stop",
        model_usage=counts.total,
    )
