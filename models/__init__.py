"""Model loading, the decode loop and steering (see issue 3 onwards)."""
