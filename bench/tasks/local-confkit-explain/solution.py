lines = []
    for key in keys:
        try:
            value = settings.lookup(key)
            origin = settings.provenance(key)
        except MissingSetting:
            lines.append(f"{key} is not set")
            continue
        source = origin.name.lower().replace("_", " ")
        lines.append(f"{key} = {value}  ({source})")
    return lines
