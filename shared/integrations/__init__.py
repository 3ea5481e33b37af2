"""Where conversations come from besides Eonyx's own clients: Microsoft Teams (a bot) and the
OpenAI-compatible facade for HTTP integrations. Each maps an outside conversation onto an
Eonyx session and runs its turns through shared.chat.
Imports every package of shared/ below the runtime (chat, sessions, accounts, llm, storage,
core); the runtime only under `if TYPE_CHECKING:`."""
