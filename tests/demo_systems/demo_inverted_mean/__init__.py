"""Deliberately broken demo system `demo_inverted_mean` (see demo_inverted_mean.gnn)."""
