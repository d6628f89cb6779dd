"""Sleeper's instance and table properties: definitions, defaults, validation, ``.properties`` files and docs.

Property constants live in the module of their area, named as in Sleeper's Java code:

- ``instance_common``: common settings, table state, metrics, logging (e.g. ``ID``, ``TAGS``)
- ``instance_ingest``: standard ingest and the ingest batcher
- ``instance_bulk``: bulk import (EMR Serverless, EMR) and bulk export
- ``instance_compaction``: compaction, partition splitting, garbage collection
- ``instance_query``: queries and Athena (e.g. ``QUERY_PROCESSOR_LAMBDA_TIMEOUT_IN_SECONDS``)
- ``instance_defaults``: ``sleeper.default.table.…`` defaults of table properties
- ``instance_cdk``: properties only a deployment sets: buckets, queues, DynamoDB tables (e.g. ``DATA_BUCKET``)
- ``table``: table properties (e.g. ``SCHEMA``, ``GARBAGE_COLLECTOR_DELAY_BEFORE_DELETION``)

Generate the docs with ``python -m sleeper.core.properties.docs docs/usage/properties``.
"""

from __future__ import annotations

from sleeper.core.naming import config_bucket_name as config_bucket_name
from sleeper.core.properties import javaprops as javaprops
from sleeper.core.properties.definitions import DefaultRule as DefaultRule
from sleeper.core.properties.definitions import InstancePropertyGroup as InstancePropertyGroup
from sleeper.core.properties.definitions import PropertyDefinition as PropertyDefinition
from sleeper.core.properties.definitions import PropertyGroup as PropertyGroup
from sleeper.core.properties.definitions import PropertyIndex as PropertyIndex
from sleeper.core.properties.definitions import TablePropertyGroup as TablePropertyGroup
from sleeper.core.properties.index import INSTANCE_PROPERTY_INDEX as INSTANCE_PROPERTY_INDEX
from sleeper.core.properties.index import TABLE_PROPERTY_INDEX as TABLE_PROPERTY_INDEX
from sleeper.core.properties.properties import INSTANCE_PROPERTIES_KEY as INSTANCE_PROPERTIES_KEY
from sleeper.core.properties.properties import InstanceProperties as InstanceProperties
from sleeper.core.properties.properties import PropertyChange as PropertyChange
from sleeper.core.properties.properties import PropertyRef as PropertyRef
from sleeper.core.properties.properties import PropertyValue as PropertyValue
from sleeper.core.properties.properties import TableProperties as TableProperties
from sleeper.core.properties.properties import edited_table_properties as edited_table_properties
from sleeper.core.properties.properties import format_value as format_value
from sleeper.core.properties.properties import gc_delay_problem as gc_delay_problem
from sleeper.core.properties.properties import new_table_properties as new_table_properties
from sleeper.core.properties.properties import property_changes as property_changes
from sleeper.core.properties.properties import table_properties_key as table_properties_key
from sleeper.core.properties.properties import validate_instance_update as validate_instance_update
from sleeper.core.properties.properties import validate_table_update as validate_table_update
from sleeper.core.properties.validation import Validator as Validator

__all__ = [
    "INSTANCE_PROPERTIES_KEY",
    "INSTANCE_PROPERTY_INDEX",
    "TABLE_PROPERTY_INDEX",
    "DefaultRule",
    "InstanceProperties",
    "InstancePropertyGroup",
    "PropertyChange",
    "PropertyDefinition",
    "PropertyGroup",
    "PropertyIndex",
    "PropertyRef",
    "PropertyValue",
    "TableProperties",
    "TablePropertyGroup",
    "Validator",
    "config_bucket_name",
    "edited_table_properties",
    "format_value",
    "gc_delay_problem",
    "javaprops",
    "new_table_properties",
    "property_changes",
    "table_properties_key",
    "validate_instance_update",
    "validate_table_update",
]
