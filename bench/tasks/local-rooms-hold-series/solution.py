first = Slot.starting_at(first_start, minutes)
    placed = []
    for i in range(count):
        slot = Slot(start_min=first.start_min + i * minutes, length_min=minutes)
        try:
            placed.append(calendar.book(slot, attendee_id=attendee, hold=True))
        except SlotTaken as clash:
            for booking in placed:
                calendar.release(booking)
            return [], clash.holder
    return [booking.slot.label() for booking in placed], None
