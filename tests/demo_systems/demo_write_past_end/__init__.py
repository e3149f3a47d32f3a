"""Deliberately broken demo system `demo_write_past_end` (see demo_write_past_end.gnn)."""
