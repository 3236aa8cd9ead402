"""`myapp config explain`: show users where their settings come from."""

from confkit import MissingSetting, Settings


def explain_settings(settings: Settings, keys: list[str]) -> list[str]:
    """Return one human-readable line per requested key, in the order asked.

    A set key is shown as "<key> = <value>  (<source>)" with two spaces before
    the parenthesis, where <source> is the name of the kind of source the value
    came from, lower-cased with underscores turned into spaces (for example
    "command line"). A key that no source sets is shown as "<key> is not set".
    """
    