"""Deliberately broken demo system `demo_missing_kernel` (see demo_missing_kernel.gnn)."""
