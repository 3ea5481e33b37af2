"""`eonyx chat`: the full-screen terminal chat client, a client of the HTTP API only.

    eonyx chat                 resume the session updated last
    eonyx chat -s ID           open this session
    eonyx chat --new           start fresh (the first message creates the session)

It uses the server URL and token `eonyx login` saved (or EONYX_URL / EONYX_TOKEN); without
them it says how to log in and exits 1. Like `eonyx run`, each turn carries the AGENTS.md
chain of the working directory as project context, or `--system-prompt` instead; the footer
says which. Textual is imported only once the checks passed, so a refusal is instant.

The click command is cli/chat/main.py, the screen cli/chat/app.py; this package's own module
imports none of them, so none of them imports it back.
"""
