kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [
        name
        for name, param in inspect.signature(func).parameters.items()
        if param.kind in kinds and param.default is inspect.Parameter.empty
    ]
