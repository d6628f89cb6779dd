"""Publishing a staged S3 object at its final key without replacing an object there (docs/reliability.md B3), against a
moto server, through :func:`sleeper.io.filesystem.publish_no_clobber` with the AWS adapters' conditional copy.

moto 5.2 ignores ``If-None-Match: *`` on ``CopyObject`` (the copy replaces the object; checked below, so a moto that
starts honouring it shows up), while it honours it on ``CompleteMultipartUpload``. So: the check made before the copy
is tested through ``CopyObject``, and the atomic condition itself through the multipart copy, with the check made to
miss an object that is there (the race the condition closes on S3).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, Final

import pytest
from botocore.exceptions import ClientError

import sleeper.adapters.aws.s3_publish as s3_publish
from sleeper.adapters.aws.s3_publish import copy_if_absent, copy_object_if_absent
from sleeper.io.filesystem import FileSystemOptions, S3Options, exists, publish_no_clobber, resolve

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

pytestmark = [pytest.mark.integration, pytest.mark.aws]

REGION: Final = "eu-west-2"


@pytest.fixture
def options(endpoint: str) -> FileSystemOptions:
    return FileSystemOptions(
        s3=S3Options(region=REGION, endpoint_override=endpoint, access_key="testing", secret_key="testing"),
        s3_copy_if_absent=copy_if_absent,
    )


@pytest.fixture
def client(options: FileSystemOptions) -> S3Client:
    return s3_publish.s3_client(options.s3)


@pytest.fixture
def bucket(client: S3Client) -> str:
    name = f"sleeper-test-publish-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": REGION})
    return name


def _get(client: S3Client, bucket: str, key: str) -> bytes:
    return client.get_object(Bucket=bucket, Key=key)["Body"].read()


STAGING = "t/data/partition_root/job.run-1.staging.parquet"
FINAL = "t/data/partition_root/job.parquet"


def should_publish_an_object_when_the_final_key_is_free(
    bucket: str, options: FileSystemOptions, client: S3Client
) -> None:
    # Given a staged object and no object at the final key
    client.put_object(Bucket=bucket, Key=STAGING, Body=b"whole output")
    fs, staging = resolve(f"s3a://{bucket}/{STAGING}", options)

    # When / Then it is published and the staged object is gone
    assert publish_no_clobber(fs, staging, f"{bucket}/{FINAL}", options=options) is True
    assert _get(client, bucket, FINAL) == b"whole output"
    assert not exists(fs, staging)


def should_leave_an_existing_object_untouched(bucket: str, options: FileSystemOptions, client: S3Client) -> None:
    # Given an object another run published at the final key
    client.put_object(Bucket=bucket, Key=FINAL, Body=b"the winner's output")
    etag = client.head_object(Bucket=bucket, Key=FINAL)["ETag"]
    client.put_object(Bucket=bucket, Key=STAGING, Body=b"the loser's output")
    fs, staging = resolve(f"s3a://{bucket}/{STAGING}", options)

    # When / Then nothing is published and the final object is the same one
    assert publish_no_clobber(fs, staging, f"{bucket}/{FINAL}", options=options) is False
    assert client.head_object(Bucket=bucket, Key=FINAL)["ETag"] == etag
    assert _get(client, bucket, FINAL) == b"the winner's output"
    assert exists(fs, staging)  # the caller discards it


def should_not_complete_a_multipart_copy_over_an_object_that_appeared_after_the_check(
    bucket: str, client: S3Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an object at the final key that the check before the copy misses (it lands between the two)
    client.put_object(Bucket=bucket, Key=FINAL, Body=b"the winner's output")
    client.put_object(Bucket=bucket, Key=STAGING, Body=b"the loser's output")
    monkeypatch.setattr(s3_publish, "_exists", lambda *args: False)

    # When the object is copied in parts (as one over 5 GiB is)
    copied = copy_object_if_absent(client, bucket, STAGING, bucket, FINAL, multipart_above=0)

    # Then CompleteMultipartUpload's If-None-Match: * refuses it, and no upload is left behind
    assert copied is False
    assert _get(client, bucket, FINAL) == b"the winner's output"
    assert client.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []


def should_copy_in_parts_when_the_final_key_is_free(bucket: str, client: S3Client) -> None:
    body = bytes(range(256)) * 100
    client.put_object(Bucket=bucket, Key=STAGING, Body=body)

    assert copy_object_if_absent(client, bucket, STAGING, bucket, FINAL, multipart_above=0) is True
    assert _get(client, bucket, FINAL) == body


def should_show_whether_moto_honours_if_none_match_on_copy_object(bucket: str, client: S3Client) -> None:
    """Documents the emulator, not Sleeper: if this starts failing, moto honours the condition on CopyObject and the
    race test above can use the single copy too."""
    client.put_object(Bucket=bucket, Key=FINAL, Body=b"winner")
    client.put_object(Bucket=bucket, Key=STAGING, Body=b"loser")
    client.copy_object(Bucket=bucket, Key=FINAL, CopySource={"Bucket": bucket, "Key": STAGING}, IfNoneMatch="*")
    assert _get(client, bucket, FINAL) == b"loser"  # moto 5.2: the condition is ignored


class _ConflictingClient:
    """A client whose first copy meets another conditional write of the key in flight (409), which then lands."""

    def __init__(self) -> None:
        self.final_exists = False
        self.copies = 0

    def head_object(self, *, Bucket: str, Key: str) -> dict[str, Any]:  # noqa: N803 (boto3's names)
        if Key == FINAL and not self.final_exists:
            raise ClientError({"Error": {"Code": "404", "Message": "Not Found"}}, "HeadObject")
        return {"ContentLength": 10}

    def copy_object(self, **kwargs: Any) -> None:
        self.copies += 1
        self.final_exists = True
        raise ClientError({"Error": {"Code": "ConditionalRequestConflict", "Message": "in flight"}}, "CopyObject")


def should_check_again_after_a_conflicting_conditional_write() -> None:
    fake = _ConflictingClient()
    sleeps: list[float] = []

    copied = copy_object_if_absent(fake, "b", STAGING, "b", FINAL, sleep=sleeps.append)  # type: ignore[arg-type]

    assert copied is False
    assert fake.copies == 1
    assert len(sleeps) == 1
