"""Composition roots: the only place implementations are chosen."""

from typing import TYPE_CHECKING

from sleeper.core import lazy_face

if TYPE_CHECKING:
    from sleeper.runtime.connection import connect as connect
    from sleeper.runtime.connection import create_instance as create_instance
    from sleeper.runtime.faults_env import UnknownCrashPointError as UnknownCrashPointError
    from sleeper.runtime.faults_env import arm_crash_points_from_environment as arm_crash_points_from_environment
    from sleeper.runtime.logging_config import apply_logging_levels as apply_logging_levels
    from sleeper.runtime.logging_config import configure_text_logging as configure_text_logging
    from sleeper.runtime.logging_config import function_log_fields as function_log_fields
    from sleeper.runtime.logging_config import logging_levels as logging_levels
    from sleeper.runtime.logging_config import running_in_lambda as running_in_lambda
    from sleeper.runtime.logging_config import service_name as service_name
    from sleeper.runtime.router import Disposition as Disposition
    from sleeper.runtime.router import feature_entry as feature_entry
    from sleeper.runtime.router import handler_entry as handler_entry
    from sleeper.runtime.router import settle as settle
    from sleeper.runtime.table_definer import TableDefinitionError as TableDefinitionError
    from sleeper.runtime.table_definer import define_tables as define_tables
    from sleeper.runtime.table_definer import parse_tables as parse_tables


__getattr__, __dir__ = lazy_face(__name__, __file__)
