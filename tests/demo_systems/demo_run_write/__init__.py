"""Deliberately broken demo system `demo_run_write` (see demo_run_write.gnn)."""
