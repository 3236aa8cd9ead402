"""steering."""
