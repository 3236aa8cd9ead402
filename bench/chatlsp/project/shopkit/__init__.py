"""shopkit: a small order, inventory and billing library (the ChatLSP benchmark's project)."""

__version__ = "0.4.0"
