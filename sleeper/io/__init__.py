"""Data files: ``pyarrow.fs`` filesystems by URI, sorted Parquet files, and the sorting and merging of Arrow batches.

Modules:

- :mod:`sleeper.io.filesystem`: a URI (local path, ``file://``, ``s3://``, ``s3a://``) to a filesystem and path.
- :mod:`sleeper.io.arrow_schema`: a Sleeper schema as an Arrow schema, and checks of batches against it.
- :mod:`sleeper.io.parquet`: writing sorted Parquet files with their sketches, and reading them by key range
  (the reading side lives in :mod:`sleeper.io.parquet_reader` and :mod:`sleeper.io.key_ranges`).
- :mod:`sleeper.io.sort` and :mod:`sleeper.io.merge`: sorting batches and merging sorted streams.
"""
