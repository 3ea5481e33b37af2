"""Microsoft Teams as a Bot Framework bot: token checks (auth), activities in and out
(activities), reply posting (connector), Teams users linked to accounts (links) and the turn
a message becomes (bot). `TeamsChannel` (channel) holds the long-lived parts per process."""
