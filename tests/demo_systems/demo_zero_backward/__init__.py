"""Deliberately broken demo system `demo_zero_backward` (see demo_zero_backward.gnn)."""
