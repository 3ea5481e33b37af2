"""The database: the engine, sessions and migrations (`database`), the ORM models (`orm`),
SQLite's one-writer gate (`sqlite_writers`) and the Alembic migrations (`migrations`).

Nothing is imported here, so that importing a module of the package runs no other.
"""
