"""Layered application settings."""

from confkit.layers import Layer, Origin, read_layer
from confkit.settings import MissingSetting, Settings

__all__ = ["Layer", "MissingSetting", "Origin", "Settings", "read_layer"]
