"""The `eonyx` command and its clients: the click group is cli/command.py's `main`, one
module per area; the API client (cli/api_client.py) is shared by the commands, the terminal
app (cli/chat/) and the MCP server, none of which needs click but the commands.
"""


class CommandError(Exception):
    """An error its user reads as it is (cli/api_error.py's ApiError: what the API refused),
    raised by code that knows no click (the terminal app and the MCP server share it); the
    group (cli/command.py) prints it as a click error, exit 1. Here, in a package module
    that imports nothing, so raising it costs no click."""
