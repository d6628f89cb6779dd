"""Data files: ``pyarrow.fs`` filesystems by URI, sorted Parquet files, and the sorting and merging of Arrow batches.

Modules:

- :mod:`sleeper.io.filesystem`: a URI (local path, ``file://``, ``s3://``, ``s3a://``) to a filesystem and path.
- :mod:`sleeper.io.arrow_types`: a Sleeper schema as an Arrow schema, and checks of batches against it.
- :mod:`sleeper.io.parquet`: writing sorted Parquet files with their sketches, and reading them by key range
  (the reading side lives in :mod:`sleeper.io.parquet_reader` and :mod:`sleeper.io.key_ranges`).
- :mod:`sleeper.io.sort` and :mod:`sleeper.io.merge`: sorting batches and merging sorted streams;
  :mod:`sleeper.io.memory`: how the process allocates the memory they churn through.
"""

from typing import TYPE_CHECKING

from sleeper.core import lazy_face

if TYPE_CHECKING:
    from sleeper.io.arrow_types import arrow_field as arrow_field
    from sleeper.io.arrow_types import arrow_schema as arrow_schema
    from sleeper.io.arrow_types import conform_batch as conform_batch
    from sleeper.io.arrow_types import key_arrow_type as key_arrow_type
    from sleeper.io.data_engine import ENGINE_ARROW as ENGINE_ARROW
    from sleeper.io.data_engine import ENGINE_DATAFUSION as ENGINE_DATAFUSION
    from sleeper.io.data_engine import resolve_engine as resolve_engine
    from sleeper.io.datafusion import DATAFUSION_MISSING as DATAFUSION_MISSING
    from sleeper.io.datafusion import INPUT_COLUMN as INPUT_COLUMN
    from sleeper.io.datafusion import PACKAGE_ROOT as PACKAGE_ROOT
    from sleeper.io.datafusion import datafusion_available as datafusion_available
    from sleeper.io.datafusion import datafusion_can_read as datafusion_can_read
    from sleeper.io.datafusion import datafusion_location as datafusion_location
    from sleeper.io.datafusion import key_range_chunks as key_range_chunks
    from sleeper.io.datafusion import merge_session as merge_session
    from sleeper.io.datafusion import range_bound as range_bound
    from sleeper.io.datafusion import region_condition as region_condition
    from sleeper.io.datafusion import register_s3 as register_s3
    from sleeper.io.exceptions import DataEngineError as DataEngineError
    from sleeper.io.exceptions import DataFileError as DataFileError
    from sleeper.io.exceptions import EngineUnavailableError as EngineUnavailableError
    from sleeper.io.exceptions import InputFileError as InputFileError
    from sleeper.io.exceptions import MissingFileError as MissingFileError
    from sleeper.io.exceptions import SchemaMismatchError as SchemaMismatchError
    from sleeper.io.exceptions import UnsafeDeleteError as UnsafeDeleteError
    from sleeper.io.exceptions import UnsupportedLocationError as UnsupportedLocationError
    from sleeper.io.exceptions import UnsupportedSettingError as UnsupportedSettingError
    from sleeper.io.exceptions import WriterClosedError as WriterClosedError
    from sleeper.io.file_metadata import SortedFileMetadata as SortedFileMetadata
    from sleeper.io.filesystem import S3_SCHEMES as S3_SCHEMES
    from sleeper.io.filesystem import FileSystemOptions as FileSystemOptions
    from sleeper.io.filesystem import S3Options as S3Options
    from sleeper.io.filesystem import delete as delete
    from sleeper.io.filesystem import delete_in_table as delete_in_table
    from sleeper.io.filesystem import delete_unreferenced as delete_unreferenced
    from sleeper.io.filesystem import exists as exists
    from sleeper.io.filesystem import filesystem_path as filesystem_path
    from sleeper.io.filesystem import list_files as list_files
    from sleeper.io.filesystem import open_output as open_output
    from sleeper.io.filesystem import publish_no_clobber as publish_no_clobber
    from sleeper.io.filesystem import read_bytes as read_bytes
    from sleeper.io.filesystem import resolve as resolve
    from sleeper.io.filesystem import s3_filesystem as s3_filesystem
    from sleeper.io.filesystem import size as size
    from sleeper.io.filesystem import write_bytes as write_bytes
    from sleeper.io.input_files import InputFile as InputFile
    from sleeper.io.input_files import expand_paths as expand_paths
    from sleeper.io.input_files import read_batches as read_batches
    from sleeper.io.input_files import read_footer as read_footer
    from sleeper.io.input_files import reads_as as reads_as
    from sleeper.io.input_files import schema_problems as schema_problems
    from sleeper.io.input_paths import is_s3_uri as is_s3_uri
    from sleeper.io.input_paths import resolve_input_paths as resolve_input_paths
    from sleeper.io.key_ranges import KeyBounds as KeyBounds
    from sleeper.io.key_ranges import Region as Region
    from sleeper.io.key_ranges import normalise_regions as normalise_regions
    from sleeper.io.memory import MemoryTuning as MemoryTuning
    from sleeper.io.memory import tune_memory as tune_memory
    from sleeper.io.merge import DEFAULT_BATCH_ROWS as DEFAULT_BATCH_ROWS
    from sleeper.io.merge import RowCounter as RowCounter
    from sleeper.io.merge import merge_sorted as merge_sorted
    from sleeper.io.parquet import ParquetSettings as ParquetSettings
    from sleeper.io.parquet import SortedFileWriter as SortedFileWriter
    from sleeper.io.parquet import WrittenFile as WrittenFile
    from sleeper.io.parquet_reader import PageSpans as PageSpans
    from sleeper.io.parquet_reader import ReadPlan as ReadPlan
    from sleeper.io.parquet_reader import SortedFileReader as SortedFileReader
    from sleeper.io.parquet_reader import check_no_unknown_columns as check_no_unknown_columns
    from sleeper.io.parquet_reader import read_file_metadata as read_file_metadata
    from sleeper.io.parquet_reader import read_sorted as read_sorted
    from sleeper.io.row_filter import RowPredicate as RowPredicate
    from sleeper.io.row_filter import column_positions as column_positions
    from sleeper.io.row_filter import filter_batch as filter_batch
    from sleeper.io.row_filter import page_spans as page_spans
    from sleeper.io.row_filter import row_group_may_match as row_group_may_match
    from sleeper.io.row_filter import row_predicate as row_predicate
    from sleeper.io.row_filter import to_expression as to_expression
    from sleeper.io.sketches import Sketches as Sketches
    from sleeper.io.sketches import SketchesError as SketchesError
    from sleeper.io.sketches import sketches_path as sketches_path
    from sleeper.io.sort import NotSortedError as NotSortedError
    from sleeper.io.sort import check_sorted as check_sorted
    from sleeper.io.sort import key_at as key_at
    from sleeper.io.sort import sort_indices as sort_indices
    from sleeper.io.sort import sort_table as sort_table


__getattr__, __dir__ = lazy_face(__name__, __file__)
