"""Deliberately broken demo system `demo_weight_index` (see demo_weight_index.gnn)."""
