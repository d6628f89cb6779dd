"""Reading sorted Parquet data files by key range, decoding only the row groups that can hold rows in the ranges.

Ranges are given per row key field as :class:`~sleeper.io.key_ranges.KeyBounds` (inclusive minimum, exclusive
maximum, the canonical form of Sleeper's ranges); a list of them makes a region, and a row is read if it is in any
region. Row groups whose statistics show they hold no row of any region are never read or decoded; rows of the other
row groups are filtered exactly with vectorised comparisons, except in row groups that lie wholly within a region.
Where a file has a page index (as this port writes them), a row group that only partly lies in the regions is read
a run of pages at a time (:mod:`sleeper.io.page_index`): only the pages that can hold its rows in the regions are
decoded, so a point lookup decodes a page of each column rather than a row group.

Footers are kept per process (the most recent :data:`FOOTER_CACHE_FILES` files), so reading a file again does not
read or decode its footer again. Data files are never rewritten under the same name; the key still holds the file's
size, and on the local disk its modification time, so a rewritten file is read afresh. Files of other filesystems
(in-memory ones in tests) are not kept.

Files are opened with ``pre_buffer=False``: with pre-buffering pyarrow fetches every requested row group before
decoding the first, which would hold whole files in memory. The names here are also available from
:mod:`sleeper.io.parquet`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyarrow import fs as pafs

from sleeper.core import ColumnStats
from sleeper.core import Schema as SleeperSchema
from sleeper.io.arrow_types import arrow_field, key_arrow_type
from sleeper.io.exceptions import DataFileError, SchemaMismatchError
from sleeper.io.file_metadata import RowGroupInfo, SortedFileMetadata, file_metadata
from sleeper.io.filesystem import FileSystemOptions, open_input, resolve
from sleeper.io.footer_cache import FOOTER_CACHE_FILES, FOOTERS, Footer, cache_key
from sleeper.io.key_ranges import (
    FieldBounds,
    NormalisedRegion,
    Region,
    normalise_regions,
    region_contains,
    region_overlaps,
    regions_mask,
)
from sleeper.io.page_index import FooterIndex, footer_bytes
from sleeper.io.read_pool import ReadAhead, read_pool
from sleeper.io.row_filter import column_positions, row_group_statistics
from sleeper.io.thrift_compact import ThriftError

__all__ = [
    "DEFAULT_BATCH_ROWS",
    "FOOTER_CACHE_FILES",
    "ReadPlan",
    "RowGroupInfo",
    "SortedFileMetadata",
    "SortedFileReader",
    "WHOLE_ROW_GROUP_SHARE",
    "check_no_unknown_columns",
    "read_file_metadata",
    "read_pool",
    "read_sorted",
]

DEFAULT_BATCH_ROWS = 65536
"""The default largest number of rows in a batch read from a file."""

WHOLE_ROW_GROUP_SHARE = 0.9
"""In a read ahead, a row group whose pages to decode (for its key ranges, a filter, or both) hold at least this share
of its rows is decoded whole; below it, only those pages are decoded. Decoding a row group whole costs about as much as
decoding 90% of it by pages, so below that share the pages are cheaper: a range scan's boundary row groups, a row group
of a file on a parent partition shared by two leaves' sub-queries (each decodes only its own pages, not the whole row
group twice), and a selective filter's partly wanted row group (``benchmarks/query.py``'s range scan used 10% less CPU
than at 0.5; ``benchmarks/filter_scan.py``'s correlated filter about 0.9x a pyarrow dataset scan at 0.5, 1.0x at
0.8-0.9, on 2 cores)."""


@dataclass(frozen=True, slots=True)
class _Step:
    """Row groups read together, and the regions their rows are filtered by (None = no filter needed)."""

    row_groups: tuple[int, ...]
    regions: tuple[NormalisedRegion, ...] | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadPlan:
    """Which row groups of a file a read decodes, chosen from their statistics.

    Attributes:
        row_groups: The row groups that will be read, in order; no other row group is read.
        filtered_row_groups: Those of them whose rows are filtered; the others lie wholly within a region.
        total_row_groups: The number of row groups in the file.
        rows: The rows in the row groups read (at least as many as the rows returned).
    """

    row_groups: tuple[int, ...]
    filtered_row_groups: tuple[int, ...]
    total_row_groups: int
    rows: int
    _steps: tuple[_Step, ...] = field(repr=False, compare=False)
    _page_spans: PageSpans | None = field(default=None, repr=False, compare=False)


PageSpans = Callable[[FooterIndex, int], "list[tuple[int, int]] | None"]
"""Told a row group's page index (loaded) and the row group, the spans ``[start, end)`` of its rows that may hold a
wanted row, from the pages' statistics (such as a filter's test of them); None when the index cannot tell."""


class SortedFileReader:
    """Reads a sorted data file by key ranges, reading only the row groups that can hold rows in the ranges.

    Opening reads the footer. Use as a context manager, or call :meth:`close`.

    Args:
        location: The file's URI or path (see :func:`sleeper.io.filesystem.resolve`).
        schema: The table schema.
        filesystem: A filesystem to use instead of the one the location's scheme names.
        options: How to reach S3.
        metadata: The file's footer, if already known (such as from a cache of :attr:`parquet_metadata`); saves
            reading it again.

    Raises:
        MissingFileError: If the file does not exist.
        DataFileError: If the file is not a readable Parquet file.
        SchemaMismatchError: If a row key column is missing or of another type than the schema's.
    """

    def __init__(
        self,
        location: str,
        schema: SleeperSchema,
        *,
        filesystem: pafs.FileSystem | None = None,
        options: FileSystemOptions | None = None,
        metadata: pq.FileMetaData | None = None,
    ) -> None:
        self._location = location
        self._schema = schema
        self._schema_arrow: pa.Schema | None = None
        fs, path = resolve(location, options, filesystem=filesystem)
        self._file = open_input(fs, path)
        try:
            key = cache_key(fs, path, self._file) if metadata is None else None
            cached = None if key is None else FOOTERS.get(key)
            self._parquet = pq.ParquetFile(
                self._file, pre_buffer=False, metadata=metadata if cached is None else cached.parquet
            )
            if cached is None:
                cached = Footer(self._parquet.metadata, filesystem=fs)
                if key is not None:
                    FOOTERS.put(key, cached)
            self._footer = cached
            self._check_key_columns()
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError) as e:
            self._file.close()
            raise DataFileError(f"{location} cannot be read as Parquet: {e}") from None
        except BaseException:
            self._file.close()
            raise
        self._info: SortedFileMetadata | None = None

    @property
    def _arrow_schema(self) -> pa.Schema:
        if self._schema_arrow is None:
            self._schema_arrow = self._parquet.schema_arrow
        return self._schema_arrow

    def _check_key_columns(self) -> None:
        file_schema = self._arrow_schema
        for f in self._schema.row_key_fields:
            index = file_schema.get_field_index(f.name)
            if index < 0:
                raise SchemaMismatchError(f"{self._location} has no row key column {f.name!r}")
            actual = file_schema.field(index).type
            expected = key_arrow_type(f.primitive_type)
            if not actual.equals(expected):
                raise SchemaMismatchError(
                    f"{self._location} row key column {f.name!r} has type {actual}, the schema says {expected}"
                )

    @property
    def column_names(self) -> list[str]:
        """The names of the file's top-level columns."""
        return list(self._arrow_schema.names)

    @property
    def parquet_metadata(self) -> pq.FileMetaData:
        """The file's footer, for callers that cache footers."""
        return self._parquet.metadata

    @property
    def metadata(self) -> SortedFileMetadata:
        """The row count and the row groups with their row key statistics."""
        if self._info is None:
            keys = tuple((f.name, f.primitive_type.value) for f in self._schema.row_key_fields)
            info = self._footer.info.get(keys)
            if info is None:
                info = file_metadata(self._parquet.metadata, self._schema)
                self._footer.info[keys] = info
            self._info = info
        return self._info

    def row_group_statistics(self, columns: Collection[str]) -> tuple[Mapping[str, ColumnStats], ...]:
        """What each row group's statistics say of some top-level columns, as a filter's test of them takes
        (:func:`sleeper.core.filter.may_match`; a column without usable statistics is left out). Decoded once per
        kept footer, so a file scanned again is pruned without decoding its statistics again."""
        wanted = frozenset(columns)
        footer = self._footer
        cached = footer.statistics.get(wanted)
        if cached is None:
            metadata = footer.parquet
            positions = column_positions(metadata)
            cached = tuple(
                row_group_statistics(metadata, group, wanted, positions) for group in range(metadata.num_row_groups)
            )
            footer.statistics[wanted] = cached
        return cached

    def plan(
        self,
        regions: Sequence[Region] | None = None,
        *,
        keep_row_group: Callable[[int], bool] | None = None,
        page_spans: PageSpans | None = None,
    ) -> ReadPlan:
        """Chooses the row groups a read of some regions decodes.

        Args:
            regions: The regions to read; None reads the whole file, an empty list nothing.
            keep_row_group: Told a row group's index, whether it may hold a wanted row (such as from a filter's test
                of its statistics); a row group it refuses is not read. Every row group the regions reach if None.
            page_spans: Which rows of a row group read may hold a wanted row, from its page index: only the pages
                holding those rows are decoded (the rows read must still be filtered). Whole row groups if None.

        Raises:
            SchemaError: If a bound names a field that is not a row key.
            KeyTypeError: If a bound's value is not of its field's type.
        """
        info = self.metadata
        normalised = None if regions is None else normalise_regions(regions, self._schema)
        steps: list[_Step] = []
        selected: list[int] = []
        filtered: list[int] = []
        rows = 0
        for group in info.row_groups:
            if keep_row_group is not None and not keep_row_group(group.index):
                continue
            if normalised is None:
                key: tuple[NormalisedRegion, ...] | None = None
            else:
                overlapping = [r for r in normalised if region_overlaps(r, group.min, group.max)]
                if not overlapping:
                    continue
                key = None if any(region_contains(r, group.min, group.max) for r in overlapping) else tuple(overlapping)
            selected.append(group.index)
            rows += group.rows
            if key is not None:
                filtered.append(group.index)
            if steps and steps[-1].regions == key:
                steps[-1] = _Step(steps[-1].row_groups + (group.index,), key)
            else:
                steps.append(_Step((group.index,), key))
        return ReadPlan(
            row_groups=tuple(selected),
            filtered_row_groups=tuple(filtered),
            total_row_groups=info.row_group_count,
            rows=rows,
            _steps=tuple(steps),
            _page_spans=page_spans,
        )

    def read(
        self,
        regions: Sequence[Region] | None = None,
        *,
        columns: Sequence[str] | None = None,
        batch_size: int = DEFAULT_BATCH_ROWS,
        use_threads: bool = True,
    ) -> Iterator[pa.RecordBatch]:
        """Reads the rows in any of the regions, in file order.

        Args:
            regions: The regions to read; None reads the whole file, an empty list nothing.
            columns: The columns to return, in order; all of the schema's by default.
            batch_size: The most rows in a batch read (filtered batches can be smaller; empty ones are skipped).
            use_threads: Decode columns in parallel.

        Raises:
            SchemaError: If a bound names a field that is not a row key.
            KeyTypeError: If a bound's value is not of its field's type.
            SchemaMismatchError: If the file lacks a requested column other than a nullable value field (read as
                nulls).
        """
        return self.read_plan(self.plan(regions), columns=columns, batch_size=batch_size, use_threads=use_threads)

    def read_plan(
        self,
        plan: ReadPlan,
        *,
        columns: Sequence[str] | None = None,
        batch_size: int = DEFAULT_BATCH_ROWS,
        use_threads: bool = True,
        readahead: int = 0,
        transform: Callable[[pa.RecordBatch], pa.RecordBatch] | None = None,
        background: bool = False,
    ) -> Iterator[pa.RecordBatch]:
        """Reads the row groups of a plan made by :meth:`plan` (see :meth:`read`).

        A nullable value field of the schema that the file lacks (a column added to the table after the file was
        written) is read as nulls of the field's type; any other column the file lacks is refused.

        Args:
            plan: The plan.
            columns: The columns to return, in order; all of the schema's by default.
            batch_size: The most rows in a batch read.
            use_threads: Decode columns in parallel (a read not ahead; read ahead, each row group is decoded on one
                thread of the pool).
            readahead: If positive, up to this many row groups are decoded at once, ahead of the batches taken, on
                the process's pool of reading threads (:func:`read_pool`; pyarrow decodes without the GIL), each row
                group on one thread, its columns one after another, so several row groups use every core. The rows
                and their order are the same; memory holds up to that many row groups decoded. The first row groups
                are submitted when this is called: close the iterator (or exhaust it) before closing the reader. A
                plan of one row group only partly in the regions is read ahead only if the pages to decode hold at
                least :data:`WHOLE_ROW_GROUP_SHARE` of its rows (a lookup is read on the caller's thread, where a
                handoff would cost more than it saves). Row groups are decoded one after another, as batches are
                taken, if 0.
            transform: Applied to every batch read (on the reading threads when reading ahead), such as a filter of
                its rows; batches it leaves empty are skipped.
            background: When reading ahead, decode at background priority (on cores the pool's other reads leave
                idle) until the first batch is taken, such as for a sub-query read before its turn.

        Raises:
            ValueError: If ``readahead`` is negative.
        """
        if readahead < 0:
            raise ValueError(f"readahead must not be negative, got {readahead}")
        names = list(columns) if columns is not None else list(self._schema.field_names)
        file_names = set(self._arrow_schema.names)
        absent = [name for name in names if name not in file_names]
        if not absent:
            return self._read_steps(plan, names, batch_size, use_threads, readahead, transform, background)
        nulls = self._null_fields(absent)
        present = [name for name in names if name in file_names]
        read = present or [self._schema.row_key_fields[0].name]  # a column to count the rows by
        completed = _completed(nulls, names, transform)
        return self._read_steps(plan, read, batch_size, use_threads, readahead, completed, background)

    def _null_fields(self, absent: Sequence[str]) -> dict[str, pa.Field]:
        """The Arrow fields of columns the file lacks, each a nullable value field of the schema.

        Raises:
            SchemaMismatchError: Naming the first column that is not such a field.
        """
        out: dict[str, pa.Field] = {}
        for name in absent:
            chosen = self._schema.field(name) if self._schema.has_field(name) else None
            if chosen is None or not chosen.nullable or name not in self._schema.value_names:
                raise SchemaMismatchError(f"{self._location} has no column {name!r}")
            out[name] = arrow_field(chosen)
        return out

    def _read_steps(
        self,
        plan: ReadPlan,
        names: list[str],
        batch_size: int,
        use_threads: bool,
        readahead: int,
        transform: Callable[[pa.RecordBatch], pa.RecordBatch] | None,
        background: bool = False,
    ) -> Iterator[pa.RecordBatch]:
        if readahead and (len(plan.row_groups) > 1 or (plan.row_groups and self._mostly_wanted(plan, names))):
            reads = self._group_reads(plan, names, batch_size, transform)
            return ReadAhead(reads, readahead, background=background)
        # One row group partly in the regions (a lookup, mostly) is read here: a handoff to a thread would cost
        # more than it saves.
        batches = self._read_in_order(plan, names, batch_size, use_threads, whole=readahead > 0)
        return batches if transform is None else _transformed(batches, transform)

    def _mostly_wanted(self, plan: ReadPlan, names: list[str]) -> bool:
        """Whether a plan's one row group is decoded mostly whole: it lies wholly within a region, or the pages
        holding its rows in the regions hold at least :data:`WHOLE_ROW_GROUP_SHARE` of its rows (or the page index
        cannot tell)."""
        step = plan._steps[0]
        if step.regions is None:
            return True
        planned = self._page_reads(step.row_groups[0], step.regions, names)
        if planned is None:
            return True
        index, spans = planned
        return _share(spans, index.row_group_rows(step.row_groups[0])) >= WHOLE_ROW_GROUP_SHARE

    def _read_in_order(
        self, plan: ReadPlan, names: list[str], batch_size: int, use_threads: bool, *, whole: bool = False
    ) -> Iterator[pa.RecordBatch]:
        for step in plan._steps:
            if step.regions is None and plan._page_spans is None:
                yield from self._read_row_groups(step.row_groups, None, names, batch_size, use_threads)
                continue
            for group in step.row_groups:
                yield from self._read_group(
                    plan._page_spans, step.regions, group, names, batch_size, use_threads, whole=whole
                )

    def _group_reads(
        self,
        plan: ReadPlan,
        names: list[str],
        batch_size: int,
        transform: Callable[[pa.RecordBatch], pa.RecordBatch] | None,
    ) -> Iterator[Callable[[], list[pa.RecordBatch]]]:
        """Each row group's read, in order, as a function giving its batches (run on a reading thread: each opens
        the file's footer afresh, as a pyarrow reader is not to be shared between threads). A row group's columns are
        decoded one after another on that thread: the pool's threads decode several row groups at once, and a
        row group's columns decoded in parallel on pyarrow's own threads would hand work between threads for no
        more use of the cores (``benchmarks/query.py``'s range scan: 0.75x a pyarrow dataset scan with the columns
        in parallel, 0.85x without, on 2 cores)."""
        for step in plan._steps:
            for group in step.row_groups:

                def read(
                    group: int = group, regions: tuple[NormalisedRegion, ...] | None = step.regions
                ) -> list[pa.RecordBatch]:
                    parquet = pq.ParquetFile(self._file, pre_buffer=False, metadata=self._footer.parquet)
                    batches = self._read_group(
                        plan._page_spans, regions, group, names, batch_size, False, parquet, whole=True
                    )
                    return list(batches if transform is None else _transformed(batches, transform))

                yield read

    def _read_group(
        self,
        page_spans: PageSpans | None,
        regions: tuple[NormalisedRegion, ...] | None,
        group: int,
        names: list[str],
        batch_size: int,
        use_threads: bool,
        parquet: pq.ParquetFile | None = None,
        *,
        whole: bool = False,
    ) -> Iterator[pa.RecordBatch]:
        """The rows of one row group in the regions (all if None), only the pages that can hold them and the wanted
        rows of ``page_spans`` decoded where the page index tells; with ``parquet``, read through that file (one of
        the reading thread's own).

        If ``whole`` (a read ahead), a row group whose pages to decode hold at least :data:`WHOLE_ROW_GROUP_SHARE` of
        its rows is decoded whole instead: about the same work, with less made of each page."""
        spans = None if page_spans is None else self._wanted_spans(page_spans, group, names)
        if spans is not None and not spans[1]:
            return  # no page of the row group can hold a wanted row
        planned = None if regions is None else self._page_reads(group, regions, names)
        if planned is not None and spans is not None:
            planned = (planned[0], _intersect_spans(planned[1], spans[1]))
        if whole:
            chosen = planned if planned is not None else spans
            if chosen is not None and _share(chosen[1], chosen[0].row_group_rows(group)) >= WHOLE_ROW_GROUP_SHARE:
                yield from self._read_row_groups((group,), regions, names, batch_size, use_threads, parquet)
                return
        if planned is None and spans is not None:
            yield from self._read_spans(spans[0], spans[1], group, regions, names, batch_size, use_threads, parquet)
            return
        if planned is None or regions is None:
            yield from self._read_row_groups((group,), regions, names, batch_size, use_threads, parquet)
        else:
            index, pages = planned
            yield from self._read_pages(index, pages, group, regions, names, batch_size)

    def _wanted_spans(
        self, page_spans: PageSpans, group: int, names: list[str]
    ) -> tuple[FooterIndex, list[tuple[int, int]]] | None:
        """The page index (loaded) and the spans of a row group's rows that may hold a wanted row, or None to read
        the row group whole (no page index, a column without one, or every row may be wanted)."""
        index = self._page_index()
        if index is None:
            return None
        index.load(group, self._read_at)
        if any(index.field_read(group, name, 0, 1) is None for name in names):
            return None
        spans = page_spans(index, group)
        if spans is None or spans == [(0, index.row_group_rows(group))]:
            return None
        return index, spans

    def _read_spans(
        self,
        index: FooterIndex,
        spans: list[tuple[int, int]],
        group: int,
        regions: tuple[NormalisedRegion, ...] | None,
        names: list[str],
        batch_size: int,
        use_threads: bool,
        parquet: pq.ParquetFile | None = None,
    ) -> Iterator[pa.RecordBatch]:
        """Reads spans of a row group's rows, every column over the pages holding them, keeping those in the
        regions (all if None); the row group whole (its columns in parallel if ``use_threads``) where a region's
        column has no page index."""
        extra = _region_fields(regions, names) if regions is not None else []
        if any(index.field_read(group, name, 0, 1) is None for name in extra):
            yield from self._read_row_groups((group,), regions, names, batch_size, use_threads, parquet)
            return
        fields = names + extra
        file_schema = self._arrow_schema
        out_schema = pa.schema([file_schema.field(name) for name in fields])
        for span_start, span_end in spans:
            for start in range(span_start, span_end, batch_size):
                end = min(start + batch_size, span_end)
                values = self._read_fields(index, group, fields, start, end)
                batch = pa.RecordBatch.from_arrays([values[n] for n in fields], schema=out_schema)
                if regions is not None:
                    batch = batch.filter(regions_mask(batch, regions))
                if extra:
                    batch = batch.select(names)
                if batch.num_rows:
                    yield batch

    def _read_row_groups(
        self,
        row_groups: tuple[int, ...],
        regions: tuple[NormalisedRegion, ...] | None,
        names: list[str],
        batch_size: int,
        use_threads: bool,
        parquet: pq.ParquetFile | None = None,
    ) -> Iterator[pa.RecordBatch]:
        extra = _region_fields(regions, names) if regions is not None else []
        batches = (self._parquet if parquet is None else parquet).iter_batches(
            batch_size=batch_size, row_groups=list(row_groups), columns=names + extra, use_threads=use_threads
        )
        for batch in batches:
            if regions is not None:
                mask = regions_mask(batch, regions)
                matching = pc.sum(mask).as_py() or 0
                if matching == 0:
                    continue
                if matching < batch.num_rows:
                    batch = batch.filter(mask)
            if extra:
                batch = batch.select(names)
            yield batch

    def _page_index(self) -> FooterIndex | None:
        """The file's page index, made once per kept footer: readers of one file in several threads share it, so a
        row group one of them loaded is loaded for all (two made at once would each lack the other's loads)."""
        footer = self._footer
        with footer.index_lock:
            if footer.index is None and not footer.index_failed:
                raw = footer_bytes(footer.parquet)
                try:
                    footer.index = None if raw is None else FooterIndex(raw)
                except ThriftError:
                    footer.index = None
                footer.index_failed = footer.index is None
            return footer.index

    def _page_reads(
        self, group: int, regions: tuple[NormalisedRegion, ...], names: list[str]
    ) -> tuple[FooterIndex, list[tuple[int, int]]] | None:
        """The page index holding the row group (loaded) and the spans of its rows to read page by page, or None to
        read the whole row group."""
        first = self._schema.row_key_fields[0].name
        bounds: list[FieldBounds] = []
        for region in regions:
            bound = next((b for b in region if b.name == first), None)
            if bound is None:
                return None  # a region not narrowing the sorted column holds rows anywhere in the row group
            bounds.append(bound)
        index = self._page_index()
        if index is None or len(index.leaves(first)) != 1:
            return None
        index.load(group, self._read_at)
        leaf = index.leaves(first)[0]
        locations = index.locations(group, leaf)
        if locations is None or any(
            index.field_read(group, name, 0, 1) is None for name in [*names, *_region_fields(regions, names)]
        ):
            return None
        spans = sorted(
            (locations.first_rows[page], locations.end_row(page))
            for bound in bounds
            for page in index.pages_overlapping(group, leaf, bound.lo, bound.hi)
        )
        merged: list[tuple[int, int]] = []
        for start, end in spans:
            if merged and merged[-1][1] >= start:
                merged[-1] = (merged[-1][0], max(merged[-1][1], end))
            else:
                merged.append((start, end))
        return index, merged

    def _read_pages(
        self,
        index: FooterIndex,
        spans: list[tuple[int, int]],
        group: int,
        regions: tuple[NormalisedRegion, ...],
        names: list[str],
        batch_size: int,
    ) -> Iterator[pa.RecordBatch]:
        """Reads spans of a row group: the row key columns the regions bound first, then the other columns over the
        pages holding the rows that match, with the page index :meth:`_page_reads` loaded the row group into."""
        key_names = [f.name for f in self._schema.row_key_fields if f.name in _region_field_set(regions)]
        others = [name for name in names if name not in key_names]
        file_schema = self._arrow_schema
        out_schema = pa.schema([file_schema.field(name) for name in names])
        for span_start, span_end in spans:
            for start in range(span_start, span_end, batch_size):
                end = min(start + batch_size, span_end)
                keys = self._read_fields(index, group, key_names, start, end)
                key_batch = pa.RecordBatch.from_arrays([keys[n] for n in key_names], names=key_names)
                mask = regions_mask(key_batch, regions)
                positions = np.flatnonzero(mask.to_numpy(zero_copy_only=False))
                if not len(positions):
                    continue
                low, high = int(positions[0]), int(positions[-1]) + 1
                rest = self._read_fields(index, group, others, start + low, start + high) if others else {}
                columns = [keys[n].slice(low, high - low) if n in keys else rest[n] for n in names]
                batch = pa.RecordBatch.from_arrays(columns, schema=out_schema)
                if len(positions) < high - low:
                    batch = batch.filter(mask.slice(low, high - low))
                yield batch

    def _read_fields(self, index: FooterIndex, group: int, fields: list[str], start: int, end: int) -> dict[str, Any]:
        """The values of some fields in rows ``[start, end)`` of a row group, decoded from whole pages."""
        reads = []
        for name in fields:
            read = index.field_read(group, name, start, end)
            assert read is not None  # checked by _page_reads
            reads.append(read)
        parquet = pq.ParquetFile(self._file, pre_buffer=False, metadata=index.metadata_for(reads))
        out: dict[str, Any] = {}
        for position, (name, read) in enumerate(zip(fields, reads, strict=True)):
            column = parquet.read_row_group(position, columns=[name], use_threads=False).column(0)
            array = column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
            out[name] = array.slice(start - read.first_row, end - start)
        return out

    def _read_at(self, offset: int, length: int) -> bytes:
        data = self._file.read_at(length, offset)
        return bytes(data)

    def close(self) -> None:
        """Closes the file."""
        self._file.close()

    def __enter__(self) -> SortedFileReader:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def check_no_unknown_columns(location: str, file_columns: Sequence[str], schema: SleeperSchema) -> None:
    """Checks that a file holds no column the schema lacks, before a rewrite of its rows (a compaction), which would
    drop it: a schema read before a column was added, by a process holding the table's properties cached, is older
    than a file written with that column.

    Raises:
        SchemaMismatchError: Naming the column; rewriting later, with the schema read again, succeeds.
    """
    unknown = [name for name in file_columns if not schema.has_field(name)]
    if unknown:
        raise SchemaMismatchError(
            f"{location} has column {unknown[0]!r}, which the table schema read lacks: the schema is older than the "
            "file (a column was added since it was read); run again with the table's schema read afresh"
        )


def _with_null_columns(batch: pa.RecordBatch, names: list[str], nulls: Mapping[str, pa.Field]) -> pa.RecordBatch:
    """The batch with the columns ``names`` in order: those of ``nulls`` all nulls of their field's type, the others
    as read."""
    rows = batch.num_rows
    fields = [nulls[n] if n in nulls else batch.schema.field(n) for n in names]
    columns = [pa.nulls(rows, type=nulls[n].type) if n in nulls else batch.column(n) for n in names]
    return pa.RecordBatch.from_arrays(columns, schema=pa.schema(fields))


def _completed(
    nulls: Mapping[str, pa.Field], names: list[str], transform: Callable[[pa.RecordBatch], pa.RecordBatch] | None
) -> Callable[[pa.RecordBatch], pa.RecordBatch]:
    """What makes a batch read of a file lacking some columns whole (``nulls``, see :func:`_with_null_columns`),
    then transforms it."""

    def complete(batch: pa.RecordBatch) -> pa.RecordBatch:
        whole = _with_null_columns(batch, names, nulls)
        return whole if transform is None else transform(whole)

    return complete


def _transformed(
    batches: Iterator[pa.RecordBatch], transform: Callable[[pa.RecordBatch], pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """The batches transformed, those left empty skipped."""
    for batch in batches:
        out = transform(batch)
        if out.num_rows:
            yield out


def _share(spans: list[tuple[int, int]], rows: int) -> float:
    """The share of a row group's rows in some spans of them."""
    return sum(end - start for start, end in spans) / rows if rows else 1.0


def _intersect_spans(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The rows in both lists of sorted, disjoint spans, as sorted, disjoint spans."""
    out: list[tuple[int, int]] = []
    i = j = 0
    while i < len(a) and j < len(b):
        low, high = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if low < high:
            out.append((low, high))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def _region_field_set(regions: Sequence[NormalisedRegion]) -> set[str]:
    return {b.name for region in regions for b in region}


def _region_fields(regions: Sequence[NormalisedRegion], names: list[str]) -> list[str]:
    """The fields the regions bound that are not among the names read, in the order first named."""
    extra: list[str] = []
    for region in regions:
        extra.extend(b.name for b in region if b.name not in names and b.name not in extra)
    return extra


def read_sorted(
    location: str,
    schema: SleeperSchema,
    *,
    regions: Sequence[Region] | None = None,
    columns: Sequence[str] | None = None,
    batch_size: int = DEFAULT_BATCH_ROWS,
    filesystem: pafs.FileSystem | None = None,
    options: FileSystemOptions | None = None,
    use_threads: bool = True,
) -> Iterator[pa.RecordBatch]:
    """Reads the rows of one data file in any of the regions (see :class:`SortedFileReader`).

    The file is opened when the first batch is requested and closed when the iterator is exhausted or closed.
    """
    with SortedFileReader(location, schema, filesystem=filesystem, options=options) as reader:
        yield from reader.read(regions, columns=columns, batch_size=batch_size, use_threads=use_threads)


def read_file_metadata(
    location: str,
    schema: SleeperSchema,
    *,
    filesystem: pafs.FileSystem | None = None,
    options: FileSystemOptions | None = None,
) -> SortedFileMetadata:
    """Reads a data file's footer: its row count and its row groups with their row key statistics.

    Raises:
        MissingFileError: If the file does not exist.
        DataFileError: If the file is not a readable Parquet file.
        SchemaMismatchError: If a row key column is missing or of another type than the schema's.
    """
    with SortedFileReader(location, schema, filesystem=filesystem, options=options) as reader:
        return reader.metadata
