"""Checking an AWS Signature Version 4 as API Gateway does for an IAM-authorised route; the emulated instance's
WebSocket API checks its ``$connect`` and its management API (``PostToConnection``) with it, against the emulator's
credentials, refusing a request that is not signed, signed by another key, for another region or service, more than
15 minutes from now, or whose signature does not match. The signature is recomputed with botocore's signer over the
headers the request says it signed, so the canonical request is built exactly as a boto3 client (or Sleeper's Python
client) builds it. :func:`sign_connect` signs a WebSocket API's upgrade request as Sleeper's Python client does.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from sleeper.adapters.aws.clients import AwsSettings

__all__ = ["MAX_SKEW", "SigV4Error", "SigningKey", "check_signature", "sign_connect"]

MAX_SKEW = timedelta(minutes=15)
"""How far a request's ``X-Amz-Date`` may be from now, as AWS allows."""
_AUTHORIZATION = re.compile(
    r"^AWS4-HMAC-SHA256\s+Credential=(?P<credential>[^,\s]+)\s*,\s*SignedHeaders=(?P<signed>[^,\s]+)\s*,"
    r"\s*Signature=(?P<signature>[0-9a-f]{64})\s*$"
)


class SigV4Error(Exception):
    """A request's signature is missing or does not hold; the message says why (API Gateway answers 403)."""


@dataclass(frozen=True, slots=True)
class SigningKey:
    """The credentials and scope requests must be signed with."""

    access_key_id: str
    secret_access_key: str
    region: str
    service: str = "execute-api"


def check_signature(
    method: str,
    url: str,
    headers: Mapping[str, str],
    body: bytes,
    key: SigningKey,
    *,
    now: datetime | None = None,
) -> None:
    """Checks a request's SigV4 ``Authorization`` header.

    Args:
        method: The HTTP method.
        url: The URL as the client addressed it (scheme, host and port as in its ``Host`` header, path, query).
        headers: The request headers (any case).
        body: The request body.
        key: The credentials and scope it must be signed with.
        now: The time to check the request's date against (default: now).

    Raises:
        SigV4Error: If the request is not signed as ``key`` requires.
    """
    lower = {name.lower(): value for name, value in headers.items()}
    authorization = lower.get("authorization")
    if not authorization:
        raise SigV4Error("Missing Authentication Token: the request is not signed (SigV4)")
    match = _AUTHORIZATION.match(authorization)
    if match is None:
        raise SigV4Error("Authorization header is not an AWS4-HMAC-SHA256 signature")
    parts = match["credential"].split("/")
    if len(parts) != 5 or parts[4] != "aws4_request":
        raise SigV4Error(f"malformed credential scope {match['credential']!r}")
    access_key, date_stamp, region, service = parts[:4]
    if access_key != key.access_key_id:
        raise SigV4Error("The security token included in the request is invalid: unknown access key")
    if "x-amz-security-token" in lower:
        raise SigV4Error("The security token included in the request is invalid: the emulator issues no session tokens")
    if region != key.region or service != key.service:
        raise SigV4Error(f"credential scope {region}/{service} should be {key.region}/{key.service}")
    amz_date = lower.get("x-amz-date", "")
    try:
        signed_at = datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    except ValueError:
        raise SigV4Error("missing or malformed X-Amz-Date header") from None
    if date_stamp != amz_date[:8]:
        raise SigV4Error("the credential scope's date is not the X-Amz-Date's")
    if abs((now or datetime.now(UTC)) - signed_at) > MAX_SKEW:
        raise SigV4Error("Signature expired: X-Amz-Date is more than 15 minutes from now")
    signed = match["signed"].split(";")
    if "host" not in signed:
        raise SigV4Error("the host header must be signed")
    missing = [name for name in signed if name not in lower]
    if missing:
        raise SigV4Error(f"signed headers missing from the request: {', '.join(missing)}")
    request = AWSRequest(method=method, url=url, data=body, headers={name: lower[name] for name in signed})
    request.context["timestamp"] = amz_date
    signer = SigV4Auth(Credentials(key.access_key_id, key.secret_access_key), key.service, key.region)
    expected = signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request)
    if not hmac.compare_digest(expected, match["signature"]):
        raise SigV4Error(
            "The request signature we calculated does not match the signature you provided: check your AWS secret "
            "access key and signing method"
        )


def sign_connect(url: str, settings: AwsSettings) -> dict[str, str]:
    """The headers that authorise a connection to a WebSocket API with IAM on ``$connect``: SigV4 of ``GET <path>``
    with the host header signed, for ``execute-api`` in the settings' region, by the settings' credentials (boto3's
    usual chain unless explicit ones are given), as Sleeper's Python client signs it.

    Raises:
        SigV4Error: If no credentials are found.
    """
    credentials = settings._session().get_credentials()
    if credentials is None:
        raise SigV4Error("no AWS credentials to sign the WebSocket connection with: configure credentials for boto3")
    frozen = credentials.get_frozen_credentials()
    request = AWSRequest(method="GET", url=url.replace("wss://", "https://", 1).replace("ws://", "http://", 1))
    SigV4Auth(frozen, "execute-api", settings.region).add_auth(request)
    return {name: str(value) for name, value in request.headers.items() if name.lower() != "host"}
