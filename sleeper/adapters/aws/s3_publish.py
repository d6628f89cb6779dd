"""Publishing a staged S3 object at its final key without replacing an object there (docs/reliability.md B3).

pyarrow's S3 filesystem has no conditional write, so :func:`sleeper.io.filesystem.publish_no_clobber` copies through
:func:`copy_if_absent`, given in :attr:`sleeper.io.filesystem.FileSystemOptions.s3_copy_if_absent`: a server-side
``CopyObject`` with ``If-None-Match: *``, or above 5 GiB (CopyObject's limit) a multipart copy (``UploadPartCopy``)
completed with ``If-None-Match: *``. S3 answers 412 Precondition Failed if an object has the key, and 409
ConditionalRequestConflict while another conditional write of the key is in flight (then the key is checked again).

moto (5.2) honours ``If-None-Match: *`` on ``PutObject`` and ``CompleteMultipartUpload`` but ignores it on
``CopyObject``, so against moto only the check made before the copy keeps a published object from being replaced;
the race between that check and the copy is closed on S3 alone.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import boto3.session
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from sleeper.adapters.aws.exceptions import error_code, translated
from sleeper.io import S3Options

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_s3.type_defs import CompletedPartTypeDef

__all__ = ["COPY_OBJECT_LIMIT", "copy_if_absent", "copy_object_if_absent", "s3_client"]

COPY_OBJECT_LIMIT = 5 * 1024**3
"""The largest object one ``CopyObject`` copies; larger ones are copied in parts."""

_MIN_PART_SIZE = 512 * 1024**2
_MAX_PARTS = 10_000
_PRECONDITION_FAILED = frozenset({"PreconditionFailed", "412"})
_CONFLICT = frozenset({"ConditionalRequestConflict", "409"})
_MISSING = frozenset({"NoSuchKey", "404", "NotFound"})
_CONFLICT_ATTEMPTS = 5


_LOG = logging.getLogger(__name__)


def copy_if_absent(options: S3Options, source: str, target: str) -> bool:
    """Copies an object to a key only if no object has that key (:data:`sleeper.io.filesystem.S3CopyIfAbsent`).

    Args:
        options: How to reach S3 (the client is built once per distinct options, as pyarrow's filesystem is).
        source: The object to copy, as ``bucket/key``.
        target: Where to copy it, as ``bucket/key``.

    Returns:
        Whether it was copied; False if an object already had the target key (it is left untouched).

    Raises:
        AwsError: If S3 refuses or cannot be reached.
    """
    source_bucket, source_key = _split(source)
    bucket, key = _split(target)
    return copy_object_if_absent(s3_client(options), source_bucket, source_key, bucket, key)


def copy_object_if_absent(
    client: S3Client,
    source_bucket: str,
    source_key: str,
    bucket: str,
    key: str,
    *,
    multipart_above: int = COPY_OBJECT_LIMIT,
    part_size: int | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> bool:
    """Copies an object to a key only if no object has that key, atomically on S3.

    The target is checked first (a cheap answer when it is there), then copied with ``If-None-Match: *``.

    Args:
        client: An S3 client.
        source_bucket: The bucket of the object to copy.
        source_key: The key of the object to copy.
        bucket: The bucket to copy to.
        key: The key to copy to.
        multipart_above: Objects larger than this many bytes are copied in parts.
        part_size: The size of each part of a multipart copy; by default at least 512 MiB, and enough for the
            object to fit in 10,000 parts.
        sleep: Waits between checks while another conditional write of the key is in flight.

    Returns:
        Whether it was copied; False if an object already had the key.

    Raises:
        AwsError: If S3 refuses or cannot be reached (``AwsResourceNotFoundError`` if the source is missing).
    """
    operation = f"CopyObject s3://{source_bucket}/{source_key} to s3://{bucket}/{key} If-None-Match: *"
    with translated(operation):
        for attempt in range(_CONFLICT_ATTEMPTS):
            if _exists(client, bucket, key):
                return False
            size = client.head_object(Bucket=source_bucket, Key=source_key)["ContentLength"]
            try:
                if size > max(multipart_above, 0):
                    _multipart_copy(client, source_bucket, source_key, bucket, key, size, part_size)
                else:
                    client.copy_object(
                        Bucket=bucket,
                        Key=key,
                        CopySource={"Bucket": source_bucket, "Key": source_key},
                        IfNoneMatch="*",
                    )
                return True
            except ClientError as e:
                code = error_code(e)
                if code in _PRECONDITION_FAILED:
                    return False
                if code not in _CONFLICT or attempt == _CONFLICT_ATTEMPTS - 1:
                    raise
                sleep(0.2 * 2**attempt)  # another publish of the key is in flight: see whether it lands
        raise AssertionError("unreachable")


def _multipart_copy(
    client: S3Client, source_bucket: str, source_key: str, bucket: str, key: str, size: int, part_size: int | None
) -> None:
    """Copies an object in parts, completing the upload with ``If-None-Match: *``; an unfinished upload is aborted."""
    chosen = part_size or max(_MIN_PART_SIZE, -(-size // _MAX_PARTS))
    upload_id = client.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    try:
        parts: list[CompletedPartTypeDef] = []
        for number, start in enumerate(range(0, size, chosen), start=1):
            end = min(start + chosen, size) - 1
            copied = client.upload_part_copy(
                Bucket=bucket,
                Key=key,
                UploadId=upload_id,
                PartNumber=number,
                CopySource={"Bucket": source_bucket, "Key": source_key},
                CopySourceRange=f"bytes={start}-{end}",
            )
            parts.append({"PartNumber": number, "ETag": copied["CopyPartResult"]["ETag"]})
        client.complete_multipart_upload(
            Bucket=bucket, Key=key, UploadId=upload_id, MultipartUpload={"Parts": parts}, IfNoneMatch="*"
        )
    except BaseException:
        try:
            client.abort_multipart_upload(Bucket=bucket, Key=key, UploadId=upload_id)
        except (ClientError, BotoCoreError) as abort_error:
            # the caller is told of the first error; the upload's parts are left to the bucket's lifecycle rule for
            # incomplete multipart uploads
            _LOG.warning("Could not abort multipart upload %s of %s/%s: %s", upload_id, bucket, key, abort_error)
        raise


def _exists(client: S3Client, bucket: str, key: str) -> bool:
    try:
        client.head_object(Bucket=bucket, Key=key)
    except ClientError as e:
        if error_code(e) in _MISSING:
            return False
        raise
    return True


def _split(path: str) -> tuple[str, str]:
    bucket, _, key = path.partition("/")
    if not bucket or not key:
        raise ValueError(f"expected bucket/key, got {path!r}")
    return bucket, key


def s3_client(options: S3Options) -> S3Client:
    """A boto3 S3 client reaching S3 as pyarrow's filesystem for the same options does, built once per distinct
    options (boto3 clients are safe to share between threads)."""
    return _s3_client(options)


@functools.cache
def _s3_client(options: S3Options) -> S3Client:
    endpoint = options.endpoint_override
    if endpoint is not None and "://" not in endpoint:
        endpoint = f"{options.scheme}://{endpoint}"
    config = Config(
        region_name=options.region,
        retries={"mode": "standard", "max_attempts": options.max_attempts},
        connect_timeout=options.connect_timeout if options.connect_timeout is not None else 60,
        read_timeout=options.request_timeout if options.request_timeout is not None else 60,
    )
    if endpoint is not None:
        # Emulators serve buckets by path; virtual-host addressing would need DNS for <bucket>.<endpoint host>.
        config = config.merge(Config(s3={"addressing_style": "path"}))
    if options.anonymous:
        from botocore import UNSIGNED

        config = config.merge(Config(signature_version=UNSIGNED))
    session = boto3.session.Session(
        aws_access_key_id=options.access_key,
        aws_secret_access_key=options.secret_key,
        aws_session_token=options.session_token,
        region_name=options.region,
    )
    return session.client("s3", endpoint_url=endpoint.rstrip("/") if endpoint else None, config=config)
