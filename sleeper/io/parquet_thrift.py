"""Parquet's footer structures as Thrift field ids (``parquet.thrift``), for the modules that read and rewrite a
footer and its page index with :mod:`sleeper.io.thrift_compact` (:mod:`sleeper.io.page_index`,
:mod:`sleeper.io.row_group_stitch`), and the framing around the footer."""

from __future__ import annotations

import struct

MAGIC = b"PAR1"
"""The four bytes that open and close a Parquet file."""

FOOTER_LENGTH = struct.Struct("<i")
"""The footer's length, stored just before the closing magic."""


# ColumnChunk
CHUNK_FILE_PATH = 1
CHUNK_FILE_OFFSET = 2
CHUNK_META = 3
CHUNK_OFFSET_INDEX_OFFSET = 4
CHUNK_OFFSET_INDEX_LENGTH = 5
CHUNK_COLUMN_INDEX_OFFSET = 6
CHUNK_COLUMN_INDEX_LENGTH = 7
CHUNK_CRYPTO = 8

# ColumnIndex
COLUMN_INDEX_NULL_PAGES = 1
COLUMN_INDEX_MINS = 2
COLUMN_INDEX_MAXS = 3

# FileMetaData
FILE_NUM_ROWS = 3
FILE_ROW_GROUPS = 4
FILE_ENCRYPTION = 8

# ColumnMetaData
META_TYPE = 1
META_PATH = 3
META_NUM_VALUES = 5
META_COMPRESSED = 7
META_DATA_PAGE_OFFSET = 9
META_INDEX_PAGE_OFFSET = 10
META_DICTIONARY_PAGE_OFFSET = 11
META_BLOOM_FILTER_OFFSET = 14

# OffsetIndex
OFFSET_INDEX_PAGES = 1

# PageLocation
PAGE_OFFSET = 1
PAGE_SIZE = 2
PAGE_FIRST_ROW = 3

# RowGroup
ROW_GROUP_COLUMNS = 1
ROW_GROUP_NUM_ROWS = 3
ROW_GROUP_FILE_OFFSET = 5
ROW_GROUP_ORDINAL = 7

# Type (physical types)
TYPE_INT32 = 1
TYPE_INT64 = 2
TYPE_BYTE_ARRAY = 6
