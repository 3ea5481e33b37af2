"""Whole-store backups and moves between databases, for a store run outside Docker.

A backup archive holds a consistent copy of the database and DATA_DIR's files (dumps.py for
the database, archive.py for the archive, restore.py to put one back); copy.py moves a
pilot's SQLite database into PostgreSQL. The session index is never carried over: it is a
cache of the session files, so the receiving database rebuilds it from them (`reindex`).

Imports shared.core, shared.files, shared.db and shared.index.
"""

from __future__ import annotations

from pathlib import Path

from shared.core.errors import EonyxError
from shared.db.database import Database
from shared.files.session_store import SessionStore
from shared.index import sync


class BackupError(EonyxError):
    """A backup, restore or copy that cannot be done; nothing was changed past the check."""

    code = "backup_error"


def reindex(database: Database, data_dir: Path) -> sync.ReconcileReport:
    """The session index rebuilt from DATA_DIR's session files, whatever rows it held (rows
    from an archive or another database describe files with other mtimes)."""
    with database.session() as db:
        sync.drop(db)
    return sync.rebuild(database, SessionStore(data_dir))
