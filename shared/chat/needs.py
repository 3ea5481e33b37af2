"""What shared.chat needs from the runtime (see shared/llm/needs.py for why): the tools a turn
offers and the deployment's identity; and what shared.memory needs."""

from __future__ import annotations

from typing import Protocol

from shared.llm.tools import ToolRegistry
from shared.memory.needs import MemoryRuntime
from shared.sessions.turn_hooks import TurnHooks


class ChatRuntime(MemoryRuntime, Protocol):
    tools: ToolRegistry
    turn_hooks: TurnHooks

    @property
    def identity(self) -> str:
        """The deployment's identity as IDENTITY.md holds it now (Runtime.identity)."""
        ...
