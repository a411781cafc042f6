"""Where datasets live: a local folder (the fast path) or any fsspec URL.

``gotk encode`` writes its output through a :class:`Storage` (every write, read, listing and delete),
and the loader reads shards from the same locations (:func:`open_input`):

* :class:`LocalStorage` — plain paths: ``pathlib``, temp file + ``os.replace``.
* :class:`FsspecStorage` — a URL (``s3://bucket/prefix``, ``gs://…``, ``file:///…``, …) through the
  fsspec registry. Object stores (:data:`OBJECT_STORES`) get each file as one object written straight
  to its final key (an object PUT is atomic: the key appears only when the upload completes; a failed
  upload is discarded); other filesystems get a temp file + ``mv`` beside the target.

``storage_options`` (``--storage-option KEY=VALUE``) are passed to the fsspec filesystem, e.g.
``endpoint_url`` for an S3-compatible server; fsspec's ``FSSPEC_<PROTOCOL>_<KEY>`` environment
variables and the usual cloud credentials (``AWS_*`` variables, ``~/.aws``) also apply. Storage
objects are rebuilt in each worker from ``(url, storage_options)`` (both picklable).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import uuid
from pathlib import Path
from typing import Any, BinaryIO

from gotk.atomic import temp_path
from gotk.errors import GotkError

S3_INSTALL_HINT = "pip install 'gotk[s3]'  (or: pip install 's3fs>=2023.1')"
# protocols whose files are objects: written once to the final key (no rename there)
OBJECT_STORES = frozenset({"s3", "s3a", "gs", "gcs", "abfs", "abfss", "az", "adl", "oss", "r2", "memory"})
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+://")


class StorageError(GotkError):
    """An output location that cannot be used (missing package, bucket or credentials)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(reason, message)
        self.message = message


def is_url(location: str | os.PathLike) -> bool:
    """True for ``scheme://…`` strings (fsspec URLs); False for plain paths."""
    return isinstance(location, str) and bool(_URL.match(location))


def join(base: str | os.PathLike, *parts: str) -> str | Path:
    """``base/part/…``: a string for URLs, a :class:`~pathlib.Path` for local paths."""
    if is_url(base):
        return "/".join([str(base).rstrip("/"), *(p.strip("/") for p in parts)])
    return Path(base, *parts)


class _Hashing:
    """A write-only binary sink that hashes (sha256) and counts what goes through it."""

    def __init__(self, f: BinaryIO) -> None:
        self.f = f
        self.sha = hashlib.sha256()
        self.nbytes = 0
        self.closed = False

    def write(self, data: Any) -> int:
        self.sha.update(data)
        self.nbytes += len(memoryview(data))
        self.f.write(data)
        return len(memoryview(data))

    def tell(self) -> int:
        return self.nbytes

    def flush(self) -> None:
        pass

    def writable(self) -> bool:
        return True

    def close(self) -> None:  # the owner commits or aborts the underlying file
        self.closed = True


class AtomicWrite:
    """One file being written: ``write`` into it, then :meth:`commit` (it appears whole under its
    name) or :meth:`abort` (nothing appears). Also a context manager (commit on success). ``sha256``
    and ``nbytes`` describe what was written."""

    def __init__(self, storage: Storage, path: str | os.PathLike) -> None:
        self.storage = storage
        self.path = path
        self.tmp: Any = None
        self.sink = _Hashing(storage._open_target(self))
        self.done = False

    def write(self, data: Any) -> int:
        return self.sink.write(data)

    @property
    def sha256(self) -> str:
        return self.sink.sha.hexdigest()

    @property
    def nbytes(self) -> int:
        return self.sink.nbytes

    def commit(self) -> None:
        if not self.done:
            self.done = True
            self.storage._commit(self)

    def abort(self) -> None:
        if not self.done:
            self.done = True
            self.storage._abort(self)

    def __enter__(self) -> AtomicWrite:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()


class Storage:
    """Operations on the output location; paths are full locations (local paths or URLs)."""

    is_local = True
    url = ""
    storage_options: dict = {}

    @staticmethod
    def for_url(location: str | os.PathLike, storage_options: dict | None = None) -> Storage:
        """:class:`FsspecStorage` for a URL, :class:`LocalStorage` otherwise. Raises
        :class:`StorageError` when fsspec or the protocol's package (e.g. s3fs) is missing."""
        if is_url(location):
            return FsspecStorage(str(location), storage_options or {})
        return LocalStorage()

    def open_write_atomic(self, path: str | os.PathLike) -> AtomicWrite:
        return AtomicWrite(self, path)

    def write_bytes_atomic(self, path: str | os.PathLike, data: bytes) -> None:
        with self.open_write_atomic(path) as f:
            f.write(data)

    def write_text_atomic(self, path: str | os.PathLike, text: str) -> None:
        self.write_bytes_atomic(path, text.encode())

    def read_text(self, path: str | os.PathLike) -> str:
        return self.read_bytes(path).decode()

    def open_input(self, path: str | os.PathLike) -> Any:
        """A source pyarrow can read (``pq.ParquetFile``, ``pq.read_metadata``): the path itself for a
        local file, else a seekable binary file object (the caller closes it)."""
        return str(path)

    # implemented by subclasses
    def _open_target(self, w: AtomicWrite) -> BinaryIO: ...
    def _commit(self, w: AtomicWrite) -> None: ...
    def _abort(self, w: AtomicWrite) -> None: ...
    def check(self, location: str | os.PathLike) -> None: ...
    def read_bytes(self, path: str | os.PathLike) -> bytes: ...
    def exists(self, path: str | os.PathLike) -> bool: ...
    def isfile(self, path: str | os.PathLike) -> bool: ...
    def isdir(self, path: str | os.PathLike) -> bool: ...
    def size(self, path: str | os.PathLike) -> int: ...
    def listdir(self, path: str | os.PathLike) -> list[tuple[str, bool]]: ...
    def find(self, path: str | os.PathLike) -> list[str | Path]: ...
    def rm(self, path: str | os.PathLike) -> None: ...
    def rm_tree(self, path: str | os.PathLike) -> None: ...
    def makedirs(self, path: str | os.PathLike) -> None: ...


class LocalStorage(Storage):
    """Plain files: temp file beside the target + ``os.replace``."""

    def _open_target(self, w: AtomicWrite) -> BinaryIO:
        Path(w.path).parent.mkdir(parents=True, exist_ok=True)
        w.tmp = temp_path(w.path)
        return open(w.tmp, "wb")

    def _commit(self, w: AtomicWrite) -> None:
        try:
            w.sink.f.close()
            os.replace(w.tmp, w.path)
        finally:
            w.tmp.unlink(missing_ok=True)

    def _abort(self, w: AtomicWrite) -> None:
        try:
            w.sink.f.close()
        finally:
            w.tmp.unlink(missing_ok=True)

    def check(self, location: str | os.PathLike) -> None:
        pass

    def read_bytes(self, path: str | os.PathLike) -> bytes:
        return Path(path).read_bytes()

    def exists(self, path: str | os.PathLike) -> bool:
        return Path(path).exists()

    def isfile(self, path: str | os.PathLike) -> bool:
        return Path(path).is_file()

    def isdir(self, path: str | os.PathLike) -> bool:
        return Path(path).is_dir()

    def size(self, path: str | os.PathLike) -> int:
        return Path(path).stat().st_size

    def listdir(self, path: str | os.PathLike) -> list[tuple[str, bool]]:
        return sorted((p.name, p.is_dir()) for p in Path(path).iterdir())

    def find(self, path: str | os.PathLike) -> list[str | Path]:
        return sorted(p for p in Path(path).rglob("*") if p.is_file())

    def rm(self, path: str | os.PathLike) -> None:
        Path(path).unlink(missing_ok=True)

    def rm_tree(self, path: str | os.PathLike) -> None:
        shutil.rmtree(path, ignore_errors=True)

    def makedirs(self, path: str | os.PathLike) -> None:
        Path(path).mkdir(parents=True, exist_ok=True)


def _filesystem(url: str, storage_options: dict):
    try:
        from fsspec.core import url_to_fs
    except ImportError as e:
        raise StorageError("storage_missing_dependency", f"--out {url}: URLs need fsspec, which is not installed: "
                           f"{S3_INSTALL_HINT}") from e
    try:
        return url_to_fs(url, **storage_options)
    except ImportError as e:
        raise StorageError("storage_missing_dependency", f"--out {url}: the package for this protocol is not "
                           f"installed ({e}); for s3:// URLs: {S3_INSTALL_HINT}") from e
    except (ValueError, TypeError) as e:
        raise StorageError("bad_storage", f"--out {url}: {e}") from e


def _describe_error(e: BaseException) -> str | None:
    """A message for credential errors (botocore's NoCredentialsError and kin), else None."""
    names = {c.__name__ for c in type(e).__mro__}
    if names & {"NoCredentialsError", "PartialCredentialsError", "CredentialRetrievalError"} or isinstance(
            e, PermissionError):
        return (f"access denied or no credentials ({type(e).__name__}: {e}); for S3 set AWS_ACCESS_KEY_ID / "
                "AWS_SECRET_ACCESS_KEY (or AWS_PROFILE), or pass --storage-option key=… --storage-option secret=…")
    return None


class FsspecStorage(Storage):
    """Any fsspec filesystem: object stores write the final key once; others temp file + ``mv``."""

    is_local = False

    def __init__(self, url: str, storage_options: dict) -> None:
        self.url = url
        self.storage_options = dict(storage_options)
        self._fs, _ = _filesystem(url, self.storage_options)
        self._pid = os.getpid()
        protocol = self._fs.protocol
        self.protocol = protocol if isinstance(protocol, str) else protocol[0]
        self.direct = self.protocol in OBJECT_STORES

    @property
    def fs(self) -> Any:
        """The fsspec filesystem, made anew in a forked process (DataLoader workers): async
        filesystems such as s3fs refuse to be used across a fork."""
        if self._pid != os.getpid():
            self._fs, _ = _filesystem(self.url, self.storage_options)
            self._pid = os.getpid()
        return self._fs

    def _p(self, path: str | os.PathLike) -> str:
        return self.fs._strip_protocol(str(path))

    def _fresh(self) -> None:
        # other processes (workers) write here too: never trust cached listings
        self.fs.invalidate_cache()

    def check(self, location: str | os.PathLike) -> None:
        """Fail early (:class:`StorageError`) when the bucket is missing or credentials are refused."""
        path = self._p(location)
        bucket = path.split("/", 1)[0]
        try:
            if self.direct and self.protocol != "memory":
                self._fresh()
                self.fs.info(bucket)
            else:
                self.fs.exists(path)
        except FileNotFoundError as e:
            if not self.direct:
                raise StorageError("storage_unavailable", f"--out {location}: {e}") from e
            raise StorageError("storage_missing_bucket", f"--out {location}: bucket {bucket!r} does not exist "
                               "(create it first, or check the name and the endpoint)") from e
        except Exception as e:  # noqa: BLE001 - cloud SDKs raise many kinds; report them plainly
            msg = _describe_error(e)
            raise StorageError("storage_unavailable", f"--out {location}: "
                               + (msg or f"cannot reach the store ({type(e).__name__}: {e})")) from e

    def _open_target(self, w: AtomicWrite) -> BinaryIO:
        if self.direct:
            return self.fs.open(self._p(w.path), "wb")
        p = self._p(w.path)
        self.fs.makedirs(p.rsplit("/", 1)[0], exist_ok=True)
        w.tmp = f"{p}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp"
        return self.fs.open(w.tmp, "wb")

    def _commit(self, w: AtomicWrite) -> None:
        f = w.sink.f
        if self.direct:
            f.close()  # completes the upload: the object appears whole
            return
        try:
            f.close()
            self.fs.mv(w.tmp, self._p(w.path))
        finally:
            if self.fs.exists(w.tmp):
                self.fs.rm(w.tmp)

    def _abort(self, w: AtomicWrite) -> None:
        f = w.sink.f
        if self.direct:
            try:
                f.discard()  # abort a multipart upload; the small buffer is dropped
            finally:
                try:
                    f.closed = True  # so that garbage collection never commits the partial file
                except AttributeError:
                    pass
            return
        try:
            f.close()
        finally:
            self.fs.rm(w.tmp)

    def read_bytes(self, path: str | os.PathLike) -> bytes:
        self._fresh()
        return self.fs.cat_file(self._p(path))

    def open_input(self, path: str | os.PathLike) -> Any:
        return self.fs.open(self._p(path), "rb")

    def exists(self, path: str | os.PathLike) -> bool:
        self._fresh()
        return self.fs.exists(self._p(path))

    def isfile(self, path: str | os.PathLike) -> bool:
        self._fresh()
        return self.fs.isfile(self._p(path))

    def isdir(self, path: str | os.PathLike) -> bool:
        self._fresh()
        return self.fs.isdir(self._p(path))

    def size(self, path: str | os.PathLike) -> int:
        self._fresh()
        return int(self.fs.size(self._p(path)))

    def listdir(self, path: str | os.PathLike) -> list[tuple[str, bool]]:
        self._fresh()
        try:
            entries = self.fs.ls(self._p(path), detail=True)
        except FileNotFoundError:
            return []
        base = self._p(path).rstrip("/")
        return sorted((e["name"].rstrip("/").rsplit("/", 1)[-1], e["type"] == "directory") for e in entries
                      if e["name"].rstrip("/") != base)

    def find(self, path: str | os.PathLike) -> list[str | Path]:
        self._fresh()
        base, root = self._p(path).rstrip("/"), str(path).rstrip("/")
        return sorted(str(join(root, f[len(base) + 1:])) for f in self.fs.find(base) if f.startswith(base + "/"))

    def rm(self, path: str | os.PathLike) -> None:
        try:
            self.fs.rm(self._p(path))
        except FileNotFoundError:
            pass

    def rm_tree(self, path: str | os.PathLike) -> None:
        self._fresh()
        try:
            if self.fs.exists(self._p(path)):
                self.fs.rm(self._p(path), recursive=True)
        except (FileNotFoundError, OSError):
            pass

    def makedirs(self, path: str | os.PathLike) -> None:
        if not self.direct:  # object stores have no folders: keys create their prefixes
            self.fs.makedirs(self._p(path), exist_ok=True)
