return profile.model_dump(by_alias=True, exclude_none=True)
