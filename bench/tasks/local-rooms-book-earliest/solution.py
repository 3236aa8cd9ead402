for start in start_times:
        slot = Slot.starting_at(start, minutes)
        try:
            calendar.book(slot, attendee_id=attendee)
        except SlotTaken:
            continue
        return slot.label()
    return None
