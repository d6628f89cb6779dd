"""Which of ``sleeper.userjars`` are Python wheels this port installs: one rule for the processes that install them
(:mod:`sleeper.iterators.shipping`) and the stacks that grant those processes read access to them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sleeper.core.properties.instance_common import USER_JARS

if TYPE_CHECKING:
    from sleeper.core.properties.properties import InstanceProperties

__all__ = ["user_wheel_keys"]


def user_wheel_keys(properties: InstanceProperties) -> list[str]:
    """The keys in ``sleeper.jars.bucket`` of the wheels (``.whl``) ``sleeper.userjars`` lists, without a leading
    ``/``; Java jars it lists are not among them (this port cannot run them)."""
    return [k.strip().lstrip("/") for k in properties.get_list(USER_JARS) if k.strip().lower().endswith(".whl")]
