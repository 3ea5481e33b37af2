"""Live event types and Redis keys: their names, in one place (as shared/core/job_names.py holds
the jobs').

An event is published by one process and read by clients that match on its `type` (the web
client, the terminal client); a Redis key written by one process is read by another (a lock,
a heartbeat, a failed-login counter). A name changed on one side only fails silently, so every
module names them through these constants, and tests/test_architecture.py fails on a literal
of either outside this module.
"""

from __future__ import annotations

# -- live events: the `type` of what shared/infra/event_bus.py pushes to a user's sockets -------

EVENT_SESSION_TITLE = "session.title"  # a pending title ended (named, or kept)
EVENT_LIKE_UPDATED = "like.updated"  # a like's curation status changed
EVENT_MEMORY_UPDATED = "memory.updated"  # a memory file was written (also a turn's step)
EVENT_SESSION_UPDATED = "session.updated"  # a stopped turn's session was indexed at last
# The events socket's own frames (api/events.py): subscribed, and why it closes.
EVENT_READY = "ready"
EVENT_ERROR = "error"

# -- Redis keys and channels: each prefix is followed by the ids its comment names ------------

LOCKS = "eonyx:lock:"  # + a lock name below (shared/infra/locks.py, RedisLocks)
EVENTS_CHANNEL = "eonyx:events:"  # + user id: the user's live events (pub/sub)
AUTH_CHANNEL = "eonyx:auth:"  # + user id: who may act as the user changed (pub/sub)
SOCKETS_BY_USER = "eonyx:sockets:user:"  # + user id: the user's open events sockets
SOCKETS_BY_TOKEN = "eonyx:sockets:token:"  # + token id: a sign-in's open events sockets
HEARTBEAT = "eonyx:heartbeat:"  # + role:name, expiring: a worker or beat is alive
HEARTBEATS = "eonyx:heartbeats:"  # + role: the set of names in that role
THROTTLE_FAILS = "eonyx:throttle:fails:"  # + throttle key: recent failed logins
THROTTLE_BLOCK = "eonyx:throttle:block:"  # + throttle key: blocked until it expires
RESENT = "eonyx:resent:"  # + job name:ids: a lost job was sent again lately
TEAMS_SEEN = "eonyx:teams:seen:"  # + digest of conversation|activity: a delivery taken
OIDC_STATE = "eonyx:oidc:state:"  # + state: a single sign-on's pending callback, expiring
RATE_LIMITS = "eonyx:ratelimit"  # the rate limits' key prefix (api/ratelimit.py), then:
RATE_LIMIT_BY_ADDRESS = "addr:"  # + remote address (no valid token presented)
RATE_LIMIT_BY_USER = "user:"  # + user id (a valid token: all of a user's tokens share it)
RATE_LIMIT_BY_TOKEN = "token:"  # + sha256 of the token, truncated (whose it is unknown)
CATALOG_CHANNEL = "eonyx:catalog:"  # + "changed": the model catalog changed (pub/sub)
SETTINGS_CHANNEL = "eonyx:settings:"  # + "changed": an admin changed a run-time setting
STORAGE_USAGE = "eonyx:storage:"  # + user id: the running figure of a user's bytes by kind
READY_PROBE = "eonyx:readyz"  # a key: /readyz writes it to prove Redis takes writes

# -- API key scopes: stored with a key, checked by the API, asked for by `eonyx mcp` ----------
# (Named here because "memory:" is also the memory lock's prefix: a scope spelt out elsewhere
# would read as a Redis key to the architecture test.)

SCOPE_MEMORY_READ = "memory:read"
SCOPE_MEMORY_WRITE = "memory:write"
SCOPE_SESSIONS_READ = "sessions:read"

# -- lock names, under LOCKS in Redis (or files under DATA_DIR/locks without Redis) ----------

TURN_LOCK = "turn:"  # + session id: one turn (or summary, or clear) at a time
TITLE_LOCK = "title:"  # + session id: the title job
SESSION_NUMBERS_LOCK = "session-numbers:"  # + user id: numbered default titles
MEMORY_LOCK = "memory:"  # + user id:kind: a memory file's writers
EXTRACT_LOCK = "extract:"  # + session id: the memory extraction job
LIKES_LOCK = "likes:"  # + session id: the writers of a session's likes
CURATE_LOCK = "curate:"  # + session id:exchange id: the curation job
TEAMS_PROVISION_LOCK = "teams:provision:"  # + AAD object id: one account per Teams user
TEAMS_TURN_LOCK = "teams:"  # + conversation key: one Teams turn at a time
BIND_LOCK = "bind:"  # + user id:channel:key: one session per external conversation
INDEX_REBUILD_LOCK = "index:rebuild"  # a name: one rebuild at a time
