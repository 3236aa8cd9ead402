from unittest.mock import patch

import attr
import attrs
import pytest
from candidate import RetryPolicy, with_attempts


def test_output_copy_with_change():
    policy = RetryPolicy(backoff=2.5, jitter=True, retry_on=("timeout", "503"))
    new = with_attempts(policy, 7)
    assert new == RetryPolicy(attempts=7, backoff=2.5, jitter=True, retry_on=("timeout", "503"))
    assert new is not policy
    assert policy.attempts == 3


def test_output_defaults_kept():
    assert with_attempts(RetryPolicy(), 1) == RetryPolicy(attempts=1)


def test_output_validator_runs():
    with pytest.raises(ValueError):
        with_attempts(RetryPolicy(), 0)


def test_approach_uses_evolve():
    real = attrs.evolve
    with patch.object(attrs, "evolve", wraps=real) as spy, patch.object(attr, "evolve", spy):
        assert with_attempts(RetryPolicy(), 5).attempts == 5
    spy.assert_called()
