"""SQLite-only parts of storage that are not stock SQLAlchemy (see `fastpath`)."""
