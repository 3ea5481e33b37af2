"""`eonyx chat`: the click command that checks the login and the project, then starts the
terminal app (cli/chat/app.py); Textual is imported only once the checks passed."""

from __future__ import annotations

import click

from cli.config import saved_login
from cli.run import project_part


@click.command()
@click.option("-s", "--session", "session_id", metavar="ID", help="Open this session.")
@click.option("--new", is_flag=True, help="Start a new session instead of resuming.")
@click.option(
    "--system-prompt",
    metavar="TEXT",
    help="Replace the system prompt (beats eonyx.json; no AGENTS.md are sent).",
)
def chat(session_id: str | None, new: bool, system_prompt: str | None) -> None:
    """The terminal chat client: resumes the latest session; /help lists the commands."""
    if session_id and new:
        raise click.UsageError("give either -s ID or --new, not both")
    url, token = saved_login()
    project = project_part(system_prompt)

    from cli.api_client import AsyncApiClient
    from cli.chat.app import ChatApp

    app = ChatApp(AsyncApiClient(url, token), session_id=session_id, new=new, project=project)
    app.run()
    if app.return_code:
        raise click.exceptions.Exit(app.return_code)
