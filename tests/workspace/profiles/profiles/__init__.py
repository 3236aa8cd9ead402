"""User profiles (pydantic 2 models) for the steering end-to-end test."""
