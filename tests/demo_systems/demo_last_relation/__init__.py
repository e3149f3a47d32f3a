"""Deliberately broken demo system `demo_last_relation` (see demo_last_relation.gnn)."""
