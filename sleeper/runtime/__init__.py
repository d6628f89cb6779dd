"""Composition roots: the only place implementations are chosen."""
