"""Deliberately broken demo system `demo_gcn_row_norm` (see demo_gcn_row_norm.gnn)."""
