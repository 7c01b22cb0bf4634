"""Files: reading and writing one file, streamed or whole, and hashing it.

Streams through pyarrow (decompressed or compressed by extension unless
told otherwise), byte ranges for random access, text and bytes whole.
Every write is atomic (:class:`tfbs.storage.AtomicOutput`), and a missing
file's error names its URI.
"""

from __future__ import annotations

import errno
import gzip
import io
from collections.abc import Callable, Iterable, Iterator
from typing import IO, TypeVar

import pyarrow as pa
import pyarrow.fs as pafs
from blake3 import blake3

from tfbs.errors import MissingInputError
from tfbs.storage import atomic, directories, filesystems

_T = TypeVar("_T")

#: Bytes read at a time while hashing: large reads keep remote stores streaming.
HASH_BLOCK_BYTES = 8 << 20


def _naming_uri(uri: str, action: Callable[[], _T]) -> _T:
    """Run ``action``; a missing file is re-raised naming ``uri``.

    pyarrow's GCS errors name the client's status, not the object, which
    leaves a user of a many-file job guessing which input is missing.
    """
    try:
        return action()
    except FileNotFoundError:
        raise FileNotFoundError(errno.ENOENT, "no such file", uri) from None


def _ensure_parent(fs: pafs.FileSystem, path: str) -> None:
    """Create the parent directory of ``path`` where directories exist.

    Object stores need none, and creating GCS marker objects would cost a
    round trip per path level on every write.
    """
    parent = path.rsplit("/", 1)[0]
    if parent and not filesystems._is_object_store(fs):
        fs.create_dir(parent, recursive=True)


def open_input(uri: str, compression: str | None = "detect") -> pa.NativeFile:
    """Open a file as a binary input stream.

    Parameters
    ----------
    uri
        The file.
    compression
        ``"detect"`` decompresses by extension (``.gz``, ``.bz2``, ``.zst``,
        ``.lz4``, through pyarrow's codecs); None reads the raw bytes; or a
        codec name.

    Raises
    ------
    FileNotFoundError
        If the file is missing; the message names ``uri``.
    """
    fs, path = filesystems.filesystem(uri)
    return _naming_uri(uri, lambda: fs.open_input_stream(path, compression=compression))


def open_output(uri: str, compression: str | None = "detect") -> atomic.AtomicOutput:
    """Open a binary output stream that replaces any file at ``uri`` when closed.

    Parent directories are created where the file system has them. The file
    appears whole at close, never before (see :class:`AtomicOutput`):
    ``with open_output(uri) as out:`` binds ``out`` to the pyarrow stream,
    and an exception in the block leaves ``uri`` as it was.

    Parameters
    ----------
    uri
        The file.
    compression
        ``"detect"`` compresses by extension (a ``.gz`` name gets gzip);
        None writes the bytes as given; or a codec name.
    """
    fs, path = filesystems.filesystem(uri)
    _ensure_parent(fs, path)
    return atomic.AtomicOutput(fs, path, compression)


def read_range(uri: str, offset: int, length: int) -> bytes:
    """Read ``length`` bytes at ``offset`` (random access, no decompression).

    Meant for reading one sequence out of a FASTA at its ``.fai`` offsets:
    on GCS only the requested range is fetched.

    Raises
    ------
    FileNotFoundError
        If the file is missing; the message names ``uri``.
    EOFError
        If the file ends before ``offset + length``: a truncated input must
        not pass as a shorter sequence.
    ValueError
        For a negative offset or length.
    """
    (data,) = read_ranges(uri, [(offset, length)])
    return data


def read_ranges(uri: str, ranges: Iterable[tuple[int, int]]) -> Iterator[bytes]:
    """:func:`read_range` of each ``(offset, length)`` in turn, through one open file.

    For reading a large range a block at a time: one allocation the size of
    the block instead of one the size of the range.

    Raises
    ------
    FileNotFoundError, EOFError, ValueError
        As :func:`read_range`.
    """
    fs, path = filesystems.filesystem(uri)
    with _naming_uri(uri, lambda: fs.open_input_file(path)) as handle:
        for offset, length in ranges:
            if offset < 0 or length < 0:
                raise ValueError(f"{uri}: bad byte range offset={offset} length={length}")
            data = handle.read_at(length, offset)  # pyarrow's order: nbytes, offset
            if len(data) != length:
                raise EOFError(f"{uri}: {length} bytes at offset {offset} requested, file ends after {len(data)}")
            yield data


def open_text(uri: str) -> IO[str]:
    """Open a (possibly gzipped) UTF-8 text file for reading.

    Raises
    ------
    FileNotFoundError
        If the file is missing; the message names ``uri``.
    """
    fs, path = filesystems.filesystem(uri)
    raw = _naming_uri(uri, lambda: fs.open_input_stream(path, compression=None))
    if uri.endswith(".gz"):
        # Python's gzip reads multi-member (bgzip) files whole.
        return io.TextIOWrapper(gzip.GzipFile(fileobj=raw), encoding="utf-8")
    return io.TextIOWrapper(raw, encoding="utf-8")


def write_bytes(uri: str, data: bytes) -> None:
    """Write ``data`` to ``uri`` as is, creating parent directories; atomic (see :func:`open_output`)."""
    with open_output(uri, compression=None) as out:
        out.write(data)


def write_text(uri: str, text: str) -> None:
    """Write UTF-8 ``text`` to ``uri`` (not compressed, whatever its name); atomic."""
    write_bytes(uri, text.encode("utf-8"))


def concatenate(part_uris: list[str], uri: str) -> int:
    """Join files byte for byte, in the order given, into ``uri`` (atomic); returns the bytes written.

    Gzip files joined this way are one gzip file of several members, which
    gzip, Python and zlib-based readers decompress whole (RFC 1952). The
    parts are streamed in blocks of :data:`HASH_BLOCK_BYTES`, never parsed.
    """
    written = 0
    with open_output(uri, compression=None) as out:
        for part in part_uris:
            with open_input(part, compression=None) as stream:
                while block := stream.read(HASH_BLOCK_BYTES):
                    out.write(block)
                    written += len(block)
    return written


def read_text(uri: str) -> str:
    """Read a whole (possibly gzipped) text file."""
    with open_text(uri) as handle:
        return handle.read()


def blake3_of(uri: str) -> tuple[str, int]:
    """BLAKE3 (hex, 256 bits) and size of the bytes at ``uri`` (a URI or local path), as stored.

    ``b3sum`` gives the same digest of a local copy.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "x"
    >>> _ = path.write_bytes(b"abc")
    >>> blake3_of(str(path))
    ('6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85', 3)
    """
    digest = blake3()
    size = 0
    with open_input(uri, compression=None) as stream:
        while chunk := stream.read(HASH_BLOCK_BYTES):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def require(uri: str | None, what: str) -> str:
    """Return ``uri`` if it exists, else raise :class:`MissingInputError`."""
    if uri is None or not directories.exists(uri):
        raise MissingInputError(f"{uri}: {what} not found")
    return uri
