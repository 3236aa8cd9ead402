names = string.Template(template_text).get_identifiers()
    return [name for name in names if name not in context]
