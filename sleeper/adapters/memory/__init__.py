"""In-memory implementations of every port, for tests and embedded use."""
