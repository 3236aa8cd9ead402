import functools
import inspect
from unittest.mock import patch

from candidate import required_params


def deploy(env, version, *args, dry_run=False, region, **kwargs):
    pass


def copy(src, dst, /, overwrite, *, follow_links=True, mode):
    pass


class Handler:
    def run(self, target, retries=3):
        pass


def test_output_plain_function():
    assert required_params(deploy) == ["env", "version", "region"]


def test_output_positional_only_skipped():
    assert required_params(copy) == ["overwrite", "mode"]


def test_output_bound_method():
    assert required_params(Handler().run) == ["target"]


def test_output_partial():
    assert required_params(functools.partial(deploy, "prod")) == ["version", "region"]


def test_output_no_params():
    assert required_params(lambda: None) == []


def test_approach_uses_inspect_signature():
    with patch.object(inspect, "signature", wraps=inspect.signature) as spy:
        assert required_params(deploy) == ["env", "version", "region"]
    spy.assert_called()
