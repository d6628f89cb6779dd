"""The guards that make moto's conditional writes atomic (``sleeper.emulator.moto_guards``): emulator and tests."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("moto")

from botocore.exceptions import ClientError  # noqa: E402
from moto.s3.models import S3Backend  # noqa: E402
from moto.s3.responses import S3Response  # noqa: E402

from sleeper.adapters.aws.clients import s3_client  # noqa: E402
from sleeper.emulator import instance as emulator_instance  # noqa: E402
from sleeper.emulator.instance import EmulatedAwsInstance, EmulatorError  # noqa: E402
from sleeper.emulator.moto_guards import (  # noqa: E402
    MotoGuardError,
    atomic_conditional_puts,
    atomic_dynamodb_items,
    atomic_queues,
    guard_moto,
)
from tests.contract.aws_backends import REGION, aws_settings, new_instance_id  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.aws]


class _Stop(Exception):
    pass


def should_guard_moto_before_the_emulator_serves(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given the guards replaced by one that stops the start
    calls: list[str] = []

    def guard() -> None:
        calls.append("guard")
        raise _Stop

    monkeypatch.setattr(emulator_instance, "guard_moto", guard)
    monkeypatch.setattr(emulator_instance, "_check_free", lambda host, port: calls.append("serve"))

    # When the emulator starts
    with pytest.raises(_Stop):
        EmulatedAwsInstance("guarded").start()

    # Then moto was guarded before anything was served
    assert calls == ["guard"]


def should_refuse_to_start_the_emulator_on_a_moto_it_cannot_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a moto whose internals the guards do not know
    def guard() -> None:
        raise MotoGuardError("cannot make moto 9.0's S3 conditional puts atomic")

    monkeypatch.setattr(emulator_instance, "guard_moto", guard)

    # When / Then the emulator refuses to start, naming why
    with pytest.raises(EmulatorError, match="S3 conditional puts"):
        EmulatedAwsInstance("unguarded").start()


@pytest.mark.parametrize(
    ("owner", "name", "guard"),
    [
        pytest.param(S3Response, "put_object", atomic_conditional_puts, id="s3"),
        pytest.param("moto.dynamodb.models.DynamoDBBackend", "transact_write_items", atomic_dynamodb_items, id="ddb"),
        pytest.param("moto.sqs.models.SQSBackend", "receive_message", atomic_queues, id="sqs"),
    ],
)
def should_fail_closed_when_moto_lacks_what_a_guard_patches(
    monkeypatch: pytest.MonkeyPatch, owner: Any, name: str, guard: Callable[[], None]
) -> None:
    # Given a moto without the method a guard patches
    if isinstance(owner, str):
        module, _, cls = owner.rpartition(".")
        owner = getattr(__import__(module, fromlist=[cls]), cls)
    monkeypatch.delattr(owner, name)

    # When / Then the guard refuses, naming what is missing and the moto it supports
    with pytest.raises(MotoGuardError, match=rf"has no {name} .*install a moto in that range"):
        guard()


def should_let_one_of_two_racing_conditional_puts_win(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given the guards, a bucket on the test moto server, and moto's write of the first put held until the second
    # put has arrived and either finished or waited a moment (moto checks If-None-Match before it writes)
    guard_moto()
    s3 = s3_client(aws_settings())
    bucket = f"sleeper-{new_instance_id()}-guards"
    s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": REGION})  # type: ignore[typeddict-item]
    arrived = threading.Event()
    second_done = threading.Event()
    held = threading.Lock()
    guarded_put = S3Response.put_object

    def put_object_arriving(self: S3Response) -> Any:
        if held.locked():
            arrived.set()
        return guarded_put(self)

    original_write = S3Backend.put_object

    def slow_first_write(self: S3Backend, *args: Any, **kwargs: Any) -> Any:
        if held.acquire(blocking=False):  # the first write only; the lock stays taken
            assert arrived.wait(5)
            second_done.wait(0.3)
        return original_write(self, *args, **kwargs)

    monkeypatch.setattr(S3Response, "put_object", put_object_arriving)
    monkeypatch.setattr(S3Backend, "put_object", slow_first_write)
    outcomes: list[str] = []

    def put(body: bytes) -> None:
        try:
            s3.put_object(Bucket=bucket, Key="log/1.json", Body=body, IfNoneMatch="*")
            outcomes.append("written")
        except ClientError as e:
            outcomes.append(e.response["Error"]["Code"])
        finally:
            if body == b"second":
                second_done.set()

    first = threading.Thread(target=put, args=(b"first",))
    first.start()
    while not held.locked():
        threading.Event().wait(0.001)
    second = threading.Thread(target=put, args=(b"second",))
    second.start()
    first.join(10)
    second.join(10)

    # When both are answered / Then exactly one was written, and the object is the winner's
    assert sorted(outcomes) == ["PreconditionFailed", "written"]
    assert s3.get_object(Bucket=bucket, Key="log/1.json")["Body"].read() == b"first"
