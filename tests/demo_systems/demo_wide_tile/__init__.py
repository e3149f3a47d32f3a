"""Deliberately broken demo system `demo_wide_tile` (see demo_wide_tile.gnn)."""
