"""Deliberately broken demo system `demo_converges_early` (see demo_converges_early.gnn)."""
