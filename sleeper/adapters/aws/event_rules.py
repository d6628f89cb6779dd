"""The EventBridge rules of an instance (pausing and resuming it, as Sleeper's admin client does) and the account the
credentials belong to (to find an instance's config bucket from its id).

The EventBridge and STS clients are typed ``Any`` (no stubs installed).
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from sleeper.adapters.aws.exceptions import translated

__all__ = ["EventBridgeRules", "caller_account"]

_NOT_FOUND_CODES = frozenset({"ResourceNotFoundException", "ResourceNotFound"})


def caller_account(client: Any) -> str:
    """The AWS account of the credentials in use (STS ``GetCallerIdentity``).

    Args:
        client: An STS client (see :func:`~sleeper.adapters.aws.clients.sts_client`).

    Raises:
        AwsError: If STS cannot be reached or refuses.
    """
    with translated("GetCallerIdentity"):
        return str(client.get_caller_identity()["Account"])


class EventBridgeRules:
    """Reads and switches the state of EventBridge rules.

    Args:
        client: An EventBridge client (see :func:`~sleeper.adapters.aws.clients.events_client`).
    """

    def __init__(self, client: Any) -> None:
        self._client = client

    def state(self, name: str) -> str | None:
        """The state of a rule (``ENABLED`` or ``DISABLED``), or None if there is no such rule.

        Raises:
            AwsError: If EventBridge fails other than by not finding the rule.
        """
        try:
            with translated(f"DescribeRule {name}", unless=_NOT_FOUND_CODES):
                return str(self._client.describe_rule(Name=name).get("State"))
        except ClientError:
            return None

    def set_enabled(self, name: str, enabled: bool) -> None:
        """Enables or disables a rule.

        Raises:
            AwsError: If EventBridge refuses (for example, there is no such rule).
        """
        operation = "EnableRule" if enabled else "DisableRule"
        with translated(f"{operation} {name}"):
            if enabled:
                self._client.enable_rule(Name=name)
            else:
                self._client.disable_rule(Name=name)
