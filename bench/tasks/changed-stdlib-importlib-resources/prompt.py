"""E-mail templates shipped as package data."""
import importlib.resources
from string import Template


def render_template(package: str, resource: str, /, **values: str) -> str:
    """Load the UTF-8 text resource ``resource`` bundled inside ``package`` (an
    importable package name, e.g. ``"myapp.templates"``) and fill it in
    with ``string.Template(...).substitute(values)``.

    A missing placeholder value raises ``KeyError``.
    """
    