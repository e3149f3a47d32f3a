"""Test-only broken system `segfaulter` (see tests/sweep_systems/README.md)."""
