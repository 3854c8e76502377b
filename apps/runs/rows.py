"""Model instances built back from the columns of a statement written once (apps/runs/claiming.py,
apps/runs/finishing.py), with the fields' own database converters — what the ORM's compiler
applies to the rows of a query it built."""

from __future__ import annotations

from django.db import connections


class Columns:
    """One model's columns in a statement, under a table alias, and its instance built back."""

    def __init__(self, model, alias: str) -> None:
        self.model = model
        self.fields = list(model._meta.concrete_fields)
        self.sql = ", ".join(f'{alias}."{field.column}"' for field in self.fields)
        self.attnames = [field.attname for field in self.fields]
        self.pk_index = self.fields.index(model._meta.pk)

    def build(self, values: tuple, using: str):
        if values[self.pk_index] is None:
            return None  # a LEFT JOIN that found no row
        connection = connections[using]
        converted = []
        for field, value in zip(self.fields, values, strict=True):
            expression = field.cached_col
            converters = connection.ops.get_db_converters(expression)
            for convert in converters + field.get_db_converters(connection):
                value = convert(value, expression, connection)
            converted.append(value)
        return self.model.from_db(using, self.attnames, converted)


def built_rows(parts: dict[str, Columns], row: tuple, using: str) -> tuple[dict, tuple]:
    """Each part's instance from its slice of ``row``, in order; and the columns left after them."""
    built, start = {}, 0
    for name, columns in parts.items():
        end = start + len(columns.fields)
        built[name] = columns.build(row[start:end], using)
        start = end
    return built, row[start:]
