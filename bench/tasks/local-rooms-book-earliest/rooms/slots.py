"""Time slots within one day, in minutes since midnight."""

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Slot:
    start_min: int
    length_min: int

    @classmethod
    def starting_at(cls, hhmm: str, minutes: int = 30) -> "Slot":
        hours, mins = hhmm.split(":")
        return cls(int(hours) * 60 + int(mins), minutes)

    @property
    def end_min(self) -> int:
        return self.start_min + self.length_min

    def overlaps(self, other: "Slot") -> bool:
        return self.start_min < other.end_min and other.start_min < self.end_min

    def label(self) -> str:
        def hhmm(total: int) -> str:
            return f"{total // 60:02d}:{total % 60:02d}"

        return f"{hhmm(self.start_min)}-{hhmm(self.end_min)}"
