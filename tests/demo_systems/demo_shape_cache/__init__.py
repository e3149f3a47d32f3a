"""Deliberately broken demo system `demo_shape_cache` (see demo_shape_cache.gnn)."""
