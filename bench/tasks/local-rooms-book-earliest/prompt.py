"""Quick-book button for the meeting-room app."""

from rooms import Calendar, Slot, SlotTaken


def book_earliest(
    calendar: Calendar, attendee: str, start_times: list[str], minutes: int = 30
) -> str | None:
    """Book the first free meeting of `minutes` length for `attendee`.

    `start_times` are candidate start times like "09:30", tried in the order
    given. Confirm the first one that does not clash with anything already in the
    room's calendar, and return its label (e.g. "09:30-10:00"). Return None if
    every candidate clashes.
    """
    