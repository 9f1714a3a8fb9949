"""team."""
