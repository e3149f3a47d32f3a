"""Deliberately broken demo system `demo_dst_rows` (see demo_dst_rows.gnn)."""
