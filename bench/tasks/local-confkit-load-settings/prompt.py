"""Start-up: work out the application's effective configuration."""

from collections.abc import Mapping

from confkit import Layer, Origin, Settings, read_layer

ENV_PREFIX = "MYAPP_"


def load_settings(
    shipped: str, site_file: str, environ: Mapping[str, str], cli_pairs: list[str]
) -> Settings:
    """Combine every configuration source into the effective settings.

    Sources, from weakest to strongest: the defaults shipped with the app and the
    site's config file (both texts in confkit's "key = value" format), the
    environment, and "key=value" pairs given on the command line. Only environment
    variables starting with ENV_PREFIX count; the setting's key is the rest of the
    variable name, lower-cased. Each source must be recorded as the kind of source
    it is, so that the settings can later tell where every value came from.
    """
    