from unittest.mock import patch

from candidate import book_earliest
from rooms import Calendar, Slot


def make_calendar() -> Calendar:
    cal = Calendar("Orion")
    cal.book(Slot.starting_at("09:00", 60), attendee_id="ops-standup")
    cal.book(Slot.starting_at("10:15", 30), attendee_id="lena", hold=True)
    return cal


def test_output_first_free_label():
    cal = make_calendar()
    assert book_earliest(cal, "sam", ["09:30", "10:00", "10:45", "11:00"]) == "10:45-11:15"
    assert book_earliest(cal, "kim", ["10:00"], minutes=15) == "10:00-10:15"


def test_output_none_when_all_clash():
    cal = make_calendar()
    assert book_earliest(cal, "sam", ["09:00", "09:45", "10:20"]) is None
    assert len(cal.bookings) == 2


def test_approach_booked_in_calendar():
    cal = make_calendar()
    original = Calendar.book
    with patch.object(Calendar, "book", autospec=True, side_effect=original) as spy:
        book_earliest(cal, "sam", ["09:30", "10:45"], minutes=45)
    assert spy.call_count == 2
    assert all(call.kwargs.get("attendee_id") == "sam" for call in spy.call_args_list)
    booking = cal.bookings[-1]
    assert (booking.attendee_id, booking.slot, booking.hold) == ("sam", Slot(645, 45), False)
