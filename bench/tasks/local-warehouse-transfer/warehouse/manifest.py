"""Delivery manifests: what a supplier says it shipped."""

from dataclasses import dataclass


@dataclass(frozen=True)
class ManifestLine:
    sku: str
    units: int
    lot: str


class Manifest:
    def __init__(self, lines: list[ManifestLine]) -> None:
        self.lines = tuple(lines)

    @classmethod
    def from_text(cls, text: str) -> "Manifest":
        """Parse lines like "BOLT-M6 x 40 @ L2024-07"; blank lines and # comments are skipped."""
        lines = []
        for raw in text.splitlines():
            raw = raw.split("#", 1)[0].strip()
            if not raw:
                continue
            item, lot = (part.strip() for part in raw.split("@", 1))
            sku, units = (part.strip() for part in item.rsplit(" x ", 1))
            lines.append(ManifestLine(sku=sku, units=int(units), lot=lot))
        return cls(lines)
