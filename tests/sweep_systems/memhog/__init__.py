"""Test-only broken system `memhog` (see tests/sweep_systems/README.md)."""
