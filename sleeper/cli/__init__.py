"""The ``sleeper`` command line."""
