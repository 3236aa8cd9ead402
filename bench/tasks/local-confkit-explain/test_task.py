from unittest.mock import patch

from candidate import explain_settings
from confkit import Layer, Origin, Settings, read_layer


def make_settings() -> Settings:
    return Settings.merged(
        read_layer("port = 8000\nhost = 127.0.0.1\nworkers = 2\n", origin=Origin.SHIPPED_DEFAULT),
        Layer(origin=Origin.ENV_OVERRIDE, entries={"workers": "4"}),
        read_layer("port = 8080 ; proxy\n", origin=Origin.SITE_FILE),
        read_layer("host=0.0.0.0", origin=Origin.COMMAND_LINE),
    )


def test_output_lines():
    assert explain_settings(make_settings(), ["port", "host", "workers", "tls_cert"]) == [
        "port = 8080  (site file)",
        "host = 0.0.0.0  (command line)",
        "workers = 4  (env override)",
        "tls_cert is not set",
    ]


def test_output_defaults_and_case():
    settings = Settings.merged(read_layer("Timeout = 30\n", origin=Origin.SHIPPED_DEFAULT))
    assert explain_settings(settings, ["timeout"]) == ["timeout = 30  (shipped default)"]
    assert explain_settings(settings, []) == []


def test_approach_asks_settings_for_provenance():
    settings = make_settings()
    original = Settings.provenance
    with patch.object(Settings, "provenance", autospec=True, side_effect=original) as spy:
        explain_settings(settings, ["port", "host"])
    asked = [
        call.args[1] if len(call.args) > 1 else call.kwargs["key"] for call in spy.call_args_list
    ]
    assert list(dict.fromkeys(asked)) == ["port", "host"]
