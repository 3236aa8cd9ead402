from unittest.mock import patch

from candidate import load_settings
from confkit import Origin, Settings

SHIPPED = """\
; defaults shipped with myapp
port = 8000
host = 127.0.0.1
log_level = info
workers = 2
"""

SITE = """\
Port = 8080      ; reverse proxy expects this
workers = 8
"""

ENV = {"MYAPP_LOG_LEVEL": "debug", "MYAPP_WORKERS": "4", "PATH": "/usr/bin", "HOME": "/root"}


def test_output_effective_values():
    settings = load_settings(SHIPPED, SITE, ENV, ["workers=16"])
    assert isinstance(settings, Settings)
    assert settings.lookup("port") == "8080"
    assert settings.lookup("host") == "127.0.0.1"
    assert settings.lookup("log_level") == "debug"
    assert settings.lookup("workers") == "16"
    assert settings.keys() == ["host", "log_level", "port", "workers"]


def test_output_provenance():
    settings = load_settings(SHIPPED, SITE, ENV, ["host=0.0.0.0"])
    assert settings.provenance("host") is Origin.COMMAND_LINE
    assert settings.provenance("workers") is Origin.ENV_OVERRIDE
    assert settings.provenance("port") is Origin.SITE_FILE
    assert settings.provenance("log_level") is Origin.ENV_OVERRIDE
    bare = load_settings(SHIPPED, "", {}, [])
    assert bare.provenance("port") is Origin.SHIPPED_DEFAULT


def test_approach_merges_layers_with_confkit():
    with patch.object(Settings, "merged", wraps=Settings.merged) as spy:
        load_settings(SHIPPED, SITE, ENV, ["workers=16"])
    spy.assert_called_once()
    layers = spy.call_args.args
    assert {layer.origin for layer in layers} == set(Origin)
