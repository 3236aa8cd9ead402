"""The effective settings: every layer merged by precedence."""

from confkit.layers import Layer, Origin


class MissingSetting(LookupError):
    pass


class Settings:
    def __init__(self, resolved: dict[str, tuple[str, Origin]]) -> None:
        self._resolved = resolved

    @classmethod
    def merged(cls, *layers: Layer) -> "Settings":
        """Merge layers in any order; the layer with the highest Origin wins per key."""
        resolved: dict[str, tuple[str, Origin]] = {}
        for layer in sorted(layers, key=lambda layer: layer.origin.value):
            for key, value in layer.entries.items():
                resolved[key] = (value, layer.origin)
        return cls(resolved)

    def keys(self) -> list[str]:
        return sorted(self._resolved)

    def lookup(self, key: str) -> str:
        try:
            return self._resolved[key.lower()][0]
        except KeyError:
            raise MissingSetting(key) from None

    def provenance(self, key: str) -> Origin:
        try:
            return self._resolved[key.lower()][1]
        except KeyError:
            raise MissingSetting(key) from None
