"""Managing a user's sessions: create, list, read, update and delete them, append records
and keep the index in step, with ownership checked on every call.
Imports shared.core, shared.infra, shared.files, shared.db, shared.index, shared.accounts
and shared.llm."""
