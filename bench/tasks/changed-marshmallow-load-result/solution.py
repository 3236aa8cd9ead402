try:
        return SignupSchema().load(form), {}
    except ValidationError as err:
        return {}, err.messages
