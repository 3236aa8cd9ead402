"""Prompt templates and pure prompt builders (see issue 3 onwards)."""
