"""The embedded local runtime: the instance in a directory, its admin, runner, handlers and tasks."""
