"""Everything durable and the channels between processes: the file store and the session
files (the truth), the SQL database, its ORM tables and migrations, the rebuildable session
index, locks, live events and the embedded Redis. Imports only shared.core."""
