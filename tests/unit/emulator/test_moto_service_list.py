"""The emulated instance makes moto's server list its services once per process rather than on every request."""

from __future__ import annotations

import pytest

pytest.importorskip("moto")

from moto import backends  # noqa: E402

from sleeper.emulator.instance import keep_moto_service_list  # noqa: E402


def should_list_the_services_once_and_answer_the_same_set_after(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given moto's listing of its package directory, counted
    listings: list[int] = []

    def listing() -> list[str]:
        listings.append(1)
        return ["dynamodb", "s3", "sqs"]

    monkeypatch.setattr(backends, "list_of_moto_modules", listing)
    # When the emulator keeps the list and moto's router asks three times
    keep_moto_service_list()
    keep_moto_service_list()
    answers = [set(backends.list_of_moto_modules()) for _ in range(3)]
    # Then the directory was listed once, and every answer is that listing
    assert len(listings) == 1
    assert answers == [{"dynamodb", "s3", "sqs"}] * 3
    assert "127.0.0.1:5000" not in backends.list_of_moto_modules()
