"""Interview days: reserve a run of back-to-back slots in one go."""

from rooms import Calendar, Slot, SlotTaken


def hold_series(
    calendar: Calendar, attendee: str, first_start: str, count: int, minutes: int
) -> tuple[list[str], str | None]:
    """Tentatively reserve `count` back-to-back slots of `minutes` for `attendee`.

    The first slot starts at `first_start` ("HH:MM"); each next one starts when
    the previous ends. The reservations are holds, not confirmed bookings. It is
    all or nothing: if any slot clashes with the calendar, undo the holds already
    placed and return ([], <who has the clashing slot>). On success return
    (the slot labels in order, None).
    """
    