"""Deliberately broken demo system `demo_draw_order` (see demo_draw_order.gnn)."""
