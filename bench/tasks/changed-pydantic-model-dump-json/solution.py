return event.model_dump_json(exclude_unset=True)
