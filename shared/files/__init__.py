"""The truth on disk: the file store's primitives (locked, fsynced appends, atomic writes,
private permissions) and the session files (one JSONL file per session, its records, their
fold and the cache of folded states). Imports only shared.core."""
