"""Deliberately broken demo system `demo_nan_first_max` (see demo_nan_first_max.gnn)."""
