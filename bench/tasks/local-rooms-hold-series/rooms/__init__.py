"""Meeting-room calendars."""

from rooms.diary import Booking, Calendar, SlotTaken
from rooms.slots import Slot

__all__ = ["Booking", "Calendar", "Slot", "SlotTaken"]
