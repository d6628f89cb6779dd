"""Adapters of the local instance: SQLite and local files."""
