"""Deliberately broken demo system `demo_segfault` (see demo_segfault.gnn)."""
