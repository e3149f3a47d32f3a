"""Deliberately broken demo system `demo_float32_path` (see demo_float32_path.gnn)."""
