schema_cls = marshmallow.Schema.from_dict(columns, name="RowSchema")
    return schema_cls(unknown=marshmallow.EXCLUDE).load(row)
