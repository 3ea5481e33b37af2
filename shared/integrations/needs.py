"""What shared.integrations needs from the runtime (see shared/llm/needs.py for why): the
Teams channel, when Teams is configured; and what shared.chat needs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from shared.chat.needs import ChatRuntime

if TYPE_CHECKING:
    from shared.integrations.teams.channel import TeamsChannel


class IntegrationsRuntime(ChatRuntime, Protocol):
    teams: TeamsChannel | None
