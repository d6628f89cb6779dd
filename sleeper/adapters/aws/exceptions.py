"""Errors of the AWS adapters, and the translation of botocore failures into them.

Adapters never let a botocore exception escape: expected outcomes (a failed condition, a missing object) become the
port's own errors, and everything else becomes an ``AwsError`` naming the operation and the AWS error code.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager

from botocore.exceptions import BotoCoreError, ClientError

from sleeper.core import SleeperError

_THROTTLING_CODES = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "RequestLimitExceeded",
        "TransactionConflictException",
        "TransactionInProgressException",
        "SlowDown",
        "Throttling",
        # Codes of the cancellation reasons of a DynamoDB transaction
        "TransactionConflict",
        "ThrottlingError",
        "ProvisionedThroughputExceeded",
    }
)
_NOT_FOUND_CODES = frozenset({"ResourceNotFoundException", "NoSuchBucket"})


class AwsError(SleeperError):
    """An AWS call failed for a reason the adapter does not expect.

    Attributes:
        operation: What the adapter was doing, e.g. ``"PutItem sleeper-abc-file-transaction-log"``.
        code: The AWS error code, or the botocore exception name when the request never got a response.
    """

    def __init__(self, operation: str, code: str, message: str) -> None:
        super().__init__(f"{operation} failed: {code}: {message}")
        self.operation = operation
        self.code = code


class AwsThrottledError(AwsError):
    """AWS refused a call for capacity or contention, even after the client's own retries; a later retry may work."""


class AwsResourceNotFoundError(AwsError):
    """A DynamoDB table or S3 bucket the adapter was configured with does not exist."""


def error_code(error: ClientError) -> str:
    """The AWS error code of a client error (empty if the response has none)."""
    return error.response.get("Error", {}).get("Code", "")


def cancellation_codes(error: ClientError) -> Sequence[str]:
    """The per-item codes of a cancelled DynamoDB transaction, in the order of its items ("None" where it was fine).

    Empty if the error is not a cancelled transaction or AWS gave no reasons.
    """
    if error_code(error) != "TransactionCanceledException":
        return ()
    return tuple(reason.get("Code", "None") for reason in error.response.get("CancellationReasons", []))


def translate(error: ClientError | BotoCoreError, operation: str) -> AwsError:
    """The ``AwsError`` for a botocore failure that the adapter has no specific meaning for.

    Args:
        error: What botocore raised.
        operation: What the adapter was doing, for the message.

    Returns:
        An ``AwsThrottledError``, an ``AwsResourceNotFoundError`` or a plain ``AwsError``; raise it ``from error``.
    """
    if isinstance(error, BotoCoreError):
        return AwsError(operation, type(error).__name__, str(error))
    code = error_code(error)
    message = error.response.get("Error", {}).get("Message", str(error))
    reasons = cancellation_codes(error)
    if reasons:
        message = f"{message} (cancellation reasons: {', '.join(reasons)})"
        if any(reason in _THROTTLING_CODES for reason in reasons):
            return AwsThrottledError(operation, code, message)
    if code in _THROTTLING_CODES:
        return AwsThrottledError(operation, code, message)
    if code in _NOT_FOUND_CODES:
        return AwsResourceNotFoundError(operation, code, message)
    return AwsError(operation, code, message)


@contextmanager
def translated(operation: str, *, unless: Collection[str] = ()) -> Iterator[None]:
    """Runs AWS calls, raising the ``AwsError`` of ``translate`` for any botocore failure in the block.

    Args:
        operation: What the block does, for the message (e.g. ``"PutItem <table>"``).
        unless: Error codes the caller expects: a ``ClientError`` with one of them passes through unchanged.
    """
    try:
        yield
    except ClientError as e:
        if error_code(e) in unless:
            raise
        raise translate(e, operation) from e
    except BotoCoreError as e:
        raise translate(e, operation) from e
