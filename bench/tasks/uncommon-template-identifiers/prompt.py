"""E-mail templates stored as ``string.Template`` text."""

import string


def missing_fields(template_text: str, context: dict[str, object]) -> list[str]:
    """Return the placeholder names used in ``template_text`` that are not
    keys of ``context``, in order of first appearance and without duplicates.

    Placeholders use ``string.Template`` syntax (``$name`` or ``${name}``);
    ``$$`` is an escaped dollar sign, not a placeholder.
    """
    