"""Immutable retry configuration for the job scheduler."""

import attrs


@attrs.frozen
class RetryPolicy:
    attempts: int = attrs.field(default=3, validator=attrs.validators.ge(1))
    backoff: float = 1.0
    jitter: bool = False
    retry_on: tuple[str, ...] = ("timeout",)


def with_attempts(policy: RetryPolicy, attempts: int) -> RetryPolicy:
    """Return a copy of ``policy`` with ``attempts`` replaced and every other
    field unchanged; ``policy`` itself is not modified. The class validators
    must run on the new value (``attempts < 1`` raises ``ValueError``).
    """
    