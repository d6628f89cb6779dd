"""The pure domain of Sleeper: standard library only, no I/O."""
