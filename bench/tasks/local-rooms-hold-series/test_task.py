from unittest.mock import patch

from candidate import hold_series
from rooms import Calendar, Slot


def make_calendar() -> Calendar:
    cal = Calendar("Vega")
    cal.book(Slot.starting_at("12:00", 60), attendee_id="lunch-and-learn")
    return cal


def test_output_series_held():
    cal = make_calendar()
    labels, blocker = hold_series(cal, "hr-interviews", "09:00", 3, 45)
    assert labels == ["09:00-09:45", "09:45-10:30", "10:30-11:15"]
    assert blocker is None
    held = [b for b in cal.bookings if b.attendee_id == "hr-interviews"]
    assert [b.hold for b in held] == [True, True, True]


def test_output_clash_rolls_back():
    cal = make_calendar()
    assert hold_series(cal, "hr-interviews", "10:30", 4, 30) == ([], "lunch-and-learn")
    assert [b.attendee_id for b in cal.bookings] == ["lunch-and-learn"]
    assert hold_series(cal, "hr-interviews", "10:30", 3, 30)[1] is None
    assert len(cal.bookings) == 4


def test_approach_holds_through_calendar():
    cal = make_calendar()
    original = Calendar.book
    with patch.object(Calendar, "book", autospec=True, side_effect=original) as spy:
        hold_series(cal, "hr-interviews", "10:00", 3, 40)
    assert [call.kwargs.get("hold") for call in spy.call_args_list] == [True, True, True]
    assert [call.kwargs.get("attendee_id") for call in spy.call_args_list] == ["hr-interviews"] * 3
    slots = [
        call.args[1] if len(call.args) > 1 else call.kwargs["slot"] for call in spy.call_args_list
    ]
    assert slots == [
        Slot(600, 40),
        Slot(640, 40),
        Slot(680, 40),
    ]
