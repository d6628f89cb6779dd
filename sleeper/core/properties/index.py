"""The indexes of every instance property and every table property, in definition order."""

from __future__ import annotations

from sleeper.core.properties import (
    instance_bulk,
    instance_cdk,
    instance_common,
    instance_compaction,
    instance_defaults,
    instance_eks,
    instance_ingest,
    instance_query,
    table,
)
from sleeper.core.properties.definitions import InstancePropertyGroup, PropertyIndex, TablePropertyGroup

INSTANCE_PROPERTY_INDEX = PropertyIndex(
    instance_common.DEFINITIONS
    + instance_ingest.DEFINITIONS
    + instance_bulk.DEFINITIONS
    + instance_eks.DEFINITIONS
    + instance_compaction.DEFINITIONS
    + instance_query.DEFINITIONS
    + instance_defaults.DEFINITIONS
    + instance_cdk.DEFINITIONS,
    InstancePropertyGroup.ALL,
)
"""Every instance property: those users set, then those a deployment sets."""

TABLE_PROPERTY_INDEX = PropertyIndex(table.DEFINITIONS, TablePropertyGroup.ALL)
"""Every table property."""
