"""The session index: listing data in SQL, a rebuildable cache of the session files.

`sync` keeps it in line with the files (write-through, reconcile, rebuild); `listing` reads a
user's listing page by page; `search` and `fulltext` hold the sessions' searchable text;
`rows` the row queries of the hot path; `appends` folds turns' appends together.

Nothing is imported here, so that importing a module of the package runs no other.
"""
