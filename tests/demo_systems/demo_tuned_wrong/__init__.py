"""Deliberately broken demo system `demo_tuned_wrong` (see demo_tuned_wrong.gnn)."""
