return pydantic.TypeAdapter(list[Event]).validate_json(payload)
