"""parameters."""
