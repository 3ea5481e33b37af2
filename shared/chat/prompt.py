"""The system prompt: its sections, their order, and which override wins.

This module owns the text the model receives as its system message. It reads nothing from
disk and never looks at the message history; callers hand it the parts (identity, the
session's frozen memory snapshot, project files, the current compaction summary).

Generated prompt, in order (DESIGN.md "The system prompt, in order"), sections separated by a
blank line, empty parts left out:

1. identity (IDENTITY.md; `DEFAULT_IDENTITY` when blank)
2. `<user-profile>` block (USER.md), when given and non-blank
3. `<agent-memory>` block (MEMORY.md), when given and non-blank
4. `# Instructions from the client` + the system and developer messages an OpenAI-style
   client sent (the facade, /v1), when there are some
5. `# Project context: <relative path>` + content, for each AGENTS.md, outermost first
6. `# Summary of earlier conversation` + summary, when the session has been compacted

Overrides (`choose_override`): a `system_prompt` sent with the request beats `eonyx.json`'s
`system_prompt`, which beats generation. A blank override counts as not given. An override
replaces the generated prompt wholesale: identity, user profile, agent memory and AGENTS.md are
all left out. A client's instructions are the client's own and follow an override too. The
one exception is the compaction summary, which is still appended after the
override under its usual heading: compaction only drops older turns from what the model sees
because their summary stands in for them, so dropping the summary too would silently lose
that part of the conversation.

Blocks are delimited by tags so user-editable text cannot pass itself off as the end of its
block: a closing tag inside the content is defused (`</agent-memory>` -> `<\\/agent-memory>`).
"""

from __future__ import annotations

from collections.abc import Sequence

from shared.chat.project_context import ContextFile
from shared.chat.project_context import choose_override as choose_override  # its old home
from shared.memory.files import DEFAULT_IDENTITY

USER_PROFILE_TAG = "user-profile"
AGENT_MEMORY_TAG = "agent-memory"
PROJECT_CONTEXT_HEADING = "# Project context: "
SUMMARY_HEADING = "# Summary of earlier conversation"
CLIENT_INSTRUCTIONS_HEADING = "# Instructions from the client"
SECTION_SEPARATOR = "\n\n"


def _given(text: str | None) -> bool:
    return text is not None and text.strip() != ""


def _block(tag: str, content: str) -> str:
    body = content.strip().replace(f"</{tag}>", f"<\\/{tag}>")
    return f"<{tag}>\n{body}\n</{tag}>"


def _summary_section(summary: str) -> str:
    return f"{SUMMARY_HEADING}\n\n{summary.strip()}"


def build_system_prompt(
    *,
    identity: str,
    user_profile: str | None,
    agent_memory: str | None,
    project_files: Sequence[ContextFile],
    summary: str | None,
    override: str | None,
    client_instructions: str | None = None,
) -> str:
    """Assemble the system prompt (see the module docstring for order and override rules).

    `user_profile` and `agent_memory` are None when disabled or in a temporary chat;
    `project_files` come outermost first; `override` is `choose_override(...)`'s result.
    """
    sections: list[str] = []
    if _given(override):
        assert override is not None
        sections.append(override.strip())
    else:
        sections.append(identity.strip() if _given(identity) else DEFAULT_IDENTITY)
        if user_profile is not None and _given(user_profile):
            sections.append(_block(USER_PROFILE_TAG, user_profile))
        if agent_memory is not None and _given(agent_memory):
            sections.append(_block(AGENT_MEMORY_TAG, agent_memory))
    if client_instructions is not None and _given(client_instructions):
        sections.append(f"{CLIENT_INSTRUCTIONS_HEADING}\n\n{client_instructions.strip()}")
    if not _given(override):
        for file in project_files:
            sections.append(f"{PROJECT_CONTEXT_HEADING}{file.path}\n\n{file.content.strip()}")
    if summary is not None and _given(summary):
        sections.append(_summary_section(summary))
    return SECTION_SEPARATOR.join(sections)
