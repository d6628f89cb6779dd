"""Plugins every test run loads: the reliability battery's report (``tests/reliability_report.py``)."""

pytest_plugins = ["tests.reliability_report"]
