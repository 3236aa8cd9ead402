"""deprecation."""
