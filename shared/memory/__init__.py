"""The memory files (identity, USER.md, MEMORY.md) and every way they are written: the
inline memory tools, background extraction and like-triggered curation, all behind the
deterministic safety filter. Imports everything below it, never shared.chat."""
