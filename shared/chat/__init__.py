"""A chat turn: project context discovery (AGENTS.md), the system prompt, compaction of old
turns into a running summary, assembling what the model is sent, and the turn loop with tool
calls and streaming.
The top of the domain: it may import every other package of shared/ but the runtime."""
