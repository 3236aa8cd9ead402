source = importlib.resources.files(package).joinpath(resource).read_text(encoding="utf-8")
    return Template(source).substitute(values)
