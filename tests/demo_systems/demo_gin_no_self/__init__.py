"""Deliberately broken demo system `demo_gin_no_self` (see demo_gin_no_self.gnn)."""
