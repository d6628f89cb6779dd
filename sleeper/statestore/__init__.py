"""The transaction-log state store: log head, snapshots, committer and upkeep."""
