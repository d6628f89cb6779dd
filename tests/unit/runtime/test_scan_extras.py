"""A scan's conversion to a data frame library that is not installed names the extra that installs it."""

from __future__ import annotations

import sys

import pytest

from sleeper.api import scan
from sleeper.core.extras import DISTRIBUTION, MissingExtraError


@pytest.mark.parametrize("module", ["pandas", "polars", "duckdb"])
def should_name_the_dataframes_extra_when_a_library_is_missing(module: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given the library cannot be imported (None in sys.modules makes its import fail)
    monkeypatch.setitem(sys.modules, module, None)
    # When a scan needs it
    with pytest.raises(MissingExtraError) as caught:
        scan._require(module)
    # Then the message names the real distribution and its extra
    assert f"pip install '{DISTRIBUTION}[dataframes]'" in str(caught.value)
    assert module in str(caught.value)
