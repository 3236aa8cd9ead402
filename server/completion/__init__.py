"""completion."""
