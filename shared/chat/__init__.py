"""A chat turn: project context discovery (AGENTS.md), system prompt assembly, compaction of
old turns into a running summary, and the turn loop with tool calls and streaming.
The top of the domain: it may import every other package of shared/ but the runtime."""
