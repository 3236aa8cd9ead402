class SearchSchema(Schema):
        q = fields.Str(required=True)
        page = fields.Int(load_default=1, validate=validate.Range(min=1))
        page_size = fields.Int(
            load_default=default_page_size, validate=validate.Range(min=1, max=100)
        )
        sort = fields.Str(
            load_default="relevance", validate=validate.OneOf(["relevance", "date"])
        )

    return SearchSchema(unknown=EXCLUDE)
