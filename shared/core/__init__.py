"""The base every other package stands on: settings, domain errors, the clock, the names
and interface of background jobs, and the names of live events and Redis keys (registry).
Imports nothing from the rest of shared/."""
