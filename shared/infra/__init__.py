"""The channels between processes: named locks, live events over Redis pub/sub, heartbeats,
the embedded Redis and the helpers that find a job lost with its worker. Imports only
shared.core."""
