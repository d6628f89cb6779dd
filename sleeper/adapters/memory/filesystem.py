"""A ``pyarrow.fs.FileSystem`` held in memory, for tests that write files (such as snapshots) without disk I/O."""

from __future__ import annotations

import io
import threading
from typing import Any

import pyarrow as pa
from pyarrow import fs as pafs


class _Sink(io.BytesIO):
    """Collects written bytes and publishes them as a file when closed."""

    def __init__(self, on_close: Any) -> None:
        super().__init__()
        self._on_close = on_close

    def close(self) -> None:
        if not self.closed:
            self._on_close(self.getvalue())
        super().close()


class InMemoryFileSystemHandler(pafs.FileSystemHandler):  # type: ignore[misc]
    """Files and directories in a dictionary. Paths are ``/``-separated; a leading ``/`` is ignored."""

    def __init__(self) -> None:
        self._files: dict[str, bytes] = {}
        self._dirs: set[str] = set()
        self._lock = threading.Lock()

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return self is not other

    __hash__ = object.__hash__

    def get_type_name(self) -> str:
        return "memory"

    def normalize_path(self, path: str) -> str:
        return _norm(path)

    def _info(self, path: str) -> pafs.FileInfo:
        p = _norm(path)
        if p in self._files:
            return pafs.FileInfo(path, pafs.FileType.File, size=len(self._files[p]))
        if p == "" or p in self._dirs or any(f.startswith(p + "/") for f in self._files):
            return pafs.FileInfo(path, pafs.FileType.Directory)
        return pafs.FileInfo(path, pafs.FileType.NotFound)

    def get_file_info(self, paths: list[str]) -> list[pafs.FileInfo]:
        with self._lock:
            return [self._info(p) for p in paths]

    def get_file_info_selector(self, selector: pafs.FileSelector) -> list[pafs.FileInfo]:
        base = _norm(selector.base_dir)
        prefix = base + "/" if base else ""
        with self._lock:
            if base and self._info(base).type != pafs.FileType.Directory:
                if selector.allow_not_found:
                    return []
                raise FileNotFoundError(selector.base_dir)
            names = {f for f in self._files if f.startswith(prefix)} | {d for d in self._dirs if d.startswith(prefix)}
            out: dict[str, pafs.FileInfo] = {}
            for name in names:
                rest = name[len(prefix) :]
                parts = rest.split("/")
                depth = len(parts) if selector.recursive else 1
                for i in range(1, min(depth, len(parts)) + 1):
                    sub = prefix + "/".join(parts[:i])
                    if sub not in out:
                        out[sub] = self._info(sub)
            return sorted(out.values(), key=lambda info: info.path)

    def create_dir(self, path: str, recursive: bool) -> None:
        p = _norm(path)
        with self._lock:
            parts = p.split("/")
            for i in range(1, len(parts) + 1):
                self._dirs.add("/".join(parts[:i]))

    def delete_dir(self, path: str) -> None:
        p = _norm(path)
        with self._lock:
            self._delete_under(p)
            self._dirs.discard(p)

    def delete_dir_contents(self, path: str, missing_dir_ok: bool = False) -> None:
        with self._lock:
            self._delete_under(_norm(path))

    def delete_root_dir_contents(self) -> None:
        with self._lock:
            self._files.clear()
            self._dirs.clear()

    def _delete_under(self, p: str) -> None:
        prefix = p + "/"
        for f in [f for f in self._files if f.startswith(prefix)]:
            del self._files[f]
        self._dirs = {d for d in self._dirs if not d.startswith(prefix)}

    def delete_file(self, path: str) -> None:
        p = _norm(path)
        with self._lock:
            if p not in self._files:
                raise FileNotFoundError(path)
            del self._files[p]

    def move(self, src: str, dest: str) -> None:
        with self._lock:
            self._files[_norm(dest)] = self._files.pop(_norm(src))

    def copy_file(self, src: str, dest: str) -> None:
        with self._lock:
            self._files[_norm(dest)] = self._files[_norm(src)]

    def _read(self, path: str) -> bytes:
        with self._lock:
            data = self._files.get(_norm(path))
        if data is None:
            raise FileNotFoundError(path)
        return data

    def open_input_stream(self, path: str) -> pa.NativeFile:
        return pa.BufferReader(self._read(path))

    def open_input_file(self, path: str) -> pa.NativeFile:
        return pa.BufferReader(self._read(path))

    def open_output_stream(self, path: str, metadata: Any) -> pa.NativeFile:
        p = _norm(path)

        def publish(data: bytes) -> None:
            with self._lock:
                self._files[p] = data

        return pa.PythonFile(_Sink(publish), mode="w")

    def open_append_stream(self, path: str, metadata: Any) -> pa.NativeFile:
        p = _norm(path)
        with self._lock:
            existing = self._files.get(p, b"")

        def publish(data: bytes) -> None:
            with self._lock:
                self._files[p] = existing + data

        return pa.PythonFile(_Sink(publish), mode="w")


def _norm(path: str) -> str:
    return path.strip("/")


def in_memory_filesystem() -> pafs.FileSystem:
    """A new, empty in-memory ``pyarrow.fs.FileSystem``."""
    return pafs.PyFileSystem(InMemoryFileSystemHandler())
