"""Storage addressed by URI: ``file://``, ``hdfs://`` and ``gs://``.

Every read and write of the pipeline outside Spark's own DataFrame I/O goes
through pyarrow's file systems here, in the driver (listing, staging,
manifests, reports) and in Spark tasks (label files, FASTA ranges, shards),
so one code path serves a laptop directory, a cluster's HDFS and a bucket:

- ``file://`` (and plain paths): ``pyarrow.fs.LocalFileSystem``.
- ``hdfs://``: HDFS's RPC protocol through ``hdfs-native``, behind pyarrow's
  file system interface (no Hadoop install, JVM or ``libhdfs`` needed).
- ``gs://`` (or ``gcs://``): ``pyarrow.fs.GcsFileSystem`` with Google's
  default credentials, or, when ``STORAGE_EMULATOR_HOST`` is set (the
  variable Google's storage clients honour), the same client pointed at
  that emulator without credentials.

Whole-file writes are atomic on every backend: a reader (or a process
resuming after a crash) finds the old file or the new one, never a
truncated one. On file systems with directories, bytes go to a hidden
sibling ``.<name>.tmp-<hex>`` that is renamed over the target once closed;
listings leave such names out (as Hadoop's readers do with dot files). On
GCS the same hidden name is uploaded and then copied over the target (a
server-side copy) and deleted: pyarrow's stream cannot drop an upload, so
an aborted write finalizes only the hidden object.

The package's modules, each re-exported here (``from tfbs import storage``
then ``storage.read_text(...)``, as before the split):

- :mod:`~tfbs.storage.uris`: URI strings, local or remote.
- :mod:`~tfbs.storage.filesystems`: the pyarrow file system of a URI.
- :mod:`~tfbs.storage.hdfs`: HDFS writes that outlive a lost DataNode.
- :mod:`~tfbs.storage.atomic`: temporary names and :class:`AtomicOutput`.
- :mod:`~tfbs.storage.directories`: listing, removing, :func:`replace_dir`.
- :mod:`~tfbs.storage.files`: one file read, written or hashed.
- :mod:`~tfbs.storage.transfers`: copies between a URI and the local disk.

A call from one module to another goes through the module
(``filesystems.filesystem(uri)``), so a test that replaces a function
replaces it in the module that defines it (``tfbs.storage.filesystems``)
and every caller in the package sees it; replacing the name re-exported
here reaches only callers outside the package.
"""

from __future__ import annotations

from tfbs.storage import atomic, directories, files, filesystems, hdfs, leftovers, transfers, uris
from tfbs.storage.atomic import AtomicOutput, is_temporary, replace_file, temporary_name
from tfbs.storage.directories import (
    delete_dir,
    delete_file,
    exists,
    list_files,
    list_sizes,
    makedirs,
    replace_dir,
)
from tfbs.storage.files import (
    HASH_BLOCK_BYTES,
    blake3_of,
    concatenate,
    open_input,
    open_output,
    open_text,
    read_range,
    read_ranges,
    read_text,
    require,
    write_bytes,
    write_text,
)
from tfbs.storage.filesystems import EMULATOR_ENV, HDFS_DEFAULT_PORT, filesystem
from tfbs.storage.hdfs import HDFS_WRITE_ATTEMPTS
from tfbs.storage.hdfs import _BytesWriter as _BytesWriter  # tests/files/test_atomic_writes.py
from tfbs.storage.leftovers import (
    PARTIAL_SUFFIX,
    PARTS_INFIX,
    STAGING_INFIX,
    Leftover,
    find_leftovers,
    remove_leftovers,
)
from tfbs.storage.transfers import (
    download_tree,
    fetch_file,
    stage_local,
    upload_file,
    upload_tree,
    write_through_local,
)
from tfbs.storage.uris import is_remote, local_path, to_uri

__all__ = [
    "EMULATOR_ENV",
    "HASH_BLOCK_BYTES",
    "HDFS_DEFAULT_PORT",
    "HDFS_WRITE_ATTEMPTS",
    "PARTIAL_SUFFIX",
    "PARTS_INFIX",
    "STAGING_INFIX",
    "AtomicOutput",
    "Leftover",
    "atomic",
    "blake3_of",
    "concatenate",
    "delete_dir",
    "delete_file",
    "directories",
    "download_tree",
    "exists",
    "fetch_file",
    "find_leftovers",
    "files",
    "filesystem",
    "filesystems",
    "hdfs",
    "leftovers",
    "is_remote",
    "is_temporary",
    "list_files",
    "list_sizes",
    "local_path",
    "makedirs",
    "open_input",
    "open_output",
    "open_text",
    "read_range",
    "read_ranges",
    "read_text",
    "remove_leftovers",
    "replace_dir",
    "replace_file",
    "require",
    "stage_local",
    "temporary_name",
    "to_uri",
    "transfers",
    "upload_file",
    "upload_tree",
    "uris",
    "write_bytes",
    "write_text",
    "write_through_local",
]
