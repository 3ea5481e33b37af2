"""The long-lived Teams objects of one process: the token verifier (metadata and key caches)
and the connector (bot token cache), sharing one httpx client. The runtime builds it when
TEAMS_APP_ID is set and closes it with everything else."""

from __future__ import annotations

import httpx

from shared.core.settings import Settings
from shared.integrations.teams.auth import TokenVerifier
from shared.integrations.teams.connector import Connector


class TeamsChannel:
    def __init__(self, settings: Settings, *, transport: httpx.BaseTransport | None = None):
        self.http = httpx.Client(timeout=httpx.Timeout(30.0, connect=10.0), transport=transport)
        self.verifier = TokenVerifier(settings, self.http)
        self.connector = Connector(settings, self.http)

    def close(self) -> None:
        self.http.close()
