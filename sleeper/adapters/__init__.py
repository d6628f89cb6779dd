"""Adapters implement the ports declared by core and the feature packages."""
