"""One room's bookings for one day."""

from dataclasses import dataclass

from rooms.slots import Slot


@dataclass(frozen=True)
class Booking:
    slot: Slot
    attendee_id: str
    hold: bool


class SlotTaken(Exception):
    """The slot overlaps an existing booking or hold; `holder` is who has it."""

    def __init__(self, slot: Slot, holder: str) -> None:
        super().__init__(f"{slot.label()} is taken by {holder}")
        self.slot = slot
        self.holder = holder


class Calendar:
    def __init__(self, room: str) -> None:
        self.room = room
        self._bookings: list[Booking] = []

    @property
    def bookings(self) -> tuple[Booking, ...]:
        return tuple(sorted(self._bookings, key=lambda b: b.slot))

    def book(self, slot: Slot, *, attendee_id: str, hold: bool = False) -> Booking:
        """Book `slot`; a hold is tentative. Raises SlotTaken on any overlap."""
        for existing in self._bookings:
            if existing.slot.overlaps(slot):
                raise SlotTaken(slot, existing.attendee_id)
        booking = Booking(slot, attendee_id, hold)
        self._bookings.append(booking)
        return booking

    def release(self, booking: Booking) -> None:
        self._bookings.remove(booking)
