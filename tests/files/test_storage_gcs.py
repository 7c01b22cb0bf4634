"""tfbs.storage on ``gs://``: pyarrow's GcsFileSystem against the GCS emulator
(tests/gcs_emulator.py), in the driver and in Spark tasks; and the error of an
unreachable ``hdfs://`` name node (HDFS itself: tests/cluster/test_hdfs.py)."""

from __future__ import annotations

import gzip
import os
import time

import pytest
from pyfaidx import Faidx

from tfbs import storage


def _relative(uris: list[str], base: str) -> list[str]:
    return [u[len(base) + 1 :] for u in uris]


def test_gs_uri_is_served_by_pyarrow_gcs_at_the_emulator(gcs_emulator, gcs_base):
    fs, path = storage.filesystem(f"{gcs_base}/a/b.txt")

    assert fs.type_name == "gcs"
    assert path == f"{gcs_base.removeprefix('gs://')}/a/b.txt"
    # gcs:// is the other spelling pyarrow accepts; same bucket, same objects.
    storage.write_text(f"{gcs_base}/a/b.txt", "via gs")
    assert storage.read_text(f"gcs://{gcs_base.removeprefix('gs://')}/a/b.txt") == "via gs"
    assert f"{gcs_base.removeprefix('gs://').split('/', 1)[1]}/a/b.txt" in gcs_emulator.objects()


def test_emulator_host_without_scheme(gcs_emulator, gcs_base, monkeypatch):
    # Google's clients accept STORAGE_EMULATOR_HOST as bare host:port too.
    monkeypatch.setenv(storage.EMULATOR_ENV, gcs_emulator.endpoint.removeprefix("http://"))
    storage.write_text(f"{gcs_base}/bare.txt", "bare host")
    assert storage.read_text(f"{gcs_base}/bare.txt") == "bare host"


def test_text_round_trip(gcs_base):
    text = "chr\tstart\tstop\tHepG2\nchr1\t0\t200\tU\n"
    storage.write_text(f"{gcs_base}/labels.tsv", text)

    assert storage.read_text(f"{gcs_base}/labels.tsv") == text
    with storage.open_text(f"{gcs_base}/labels.tsv") as handle:
        assert handle.readline() == "chr\tstart\tstop\tHepG2\n"


def test_gzip_text_multi_member(gcs_base):
    # Two gzip members, as bgzip writes them: both must be read.
    data = gzip.compress(b"chr\tstart\n") + gzip.compress(b"chr1\t0\n")
    storage.write_bytes(f"{gcs_base}/labels.tsv.gz", data)

    assert storage.read_text(f"{gcs_base}/labels.tsv.gz") == "chr\tstart\nchr1\t0\n"
    with storage.open_input(f"{gcs_base}/labels.tsv.gz") as stream:
        assert stream.read() == b"chr\tstart\nchr1\t0\n"
    with storage.open_input(f"{gcs_base}/labels.tsv.gz", compression=None) as stream:
        assert stream.read() == data


def test_bytes_round_trip_past_one_upload_chunk(gcs_base):
    # Over pyarrow's 256 KiB upload buffer: a resumable upload in chunks.
    data = bytes(range(251)) * 2000
    storage.write_bytes(f"{gcs_base}/blob.bin", data)

    with storage.open_input(f"{gcs_base}/blob.bin") as stream:
        assert stream.read() == data


def test_aborted_write_publishes_no_object(gcs_emulator, gcs_base):
    key = gcs_base.split("/", 3)[3]
    target = f"{gcs_base}/out/blob.bin"
    out = storage.open_output(target, compression=None)
    out.write(bytes(range(251)) * 2000)  # past one upload chunk: a resumable upload under way
    out.abort()

    assert not storage.exists(target)
    assert gcs_emulator.objects(key) == {}  # nor anything under a hidden name

    storage.write_bytes(target, b"old")
    with pytest.raises(RuntimeError, match="mid-write"), storage.open_output(target, compression=None) as stream:
        stream.write(b"partial" * 100_000)
        raise RuntimeError("mid-write")
    assert storage.read_text(target) == "old"
    assert list(gcs_emulator.objects(key)) == [f"{key}/out/blob.bin"]


def test_committed_write_is_whole_and_alone(gcs_emulator, gcs_base):
    key = gcs_base.split("/", 3)[3]
    data = bytes(range(251)) * 3000
    storage.write_bytes(f"{gcs_base}/blob.bin", b"old")
    storage.write_bytes(f"{gcs_base}/blob.bin", data)

    with storage.open_input(f"{gcs_base}/blob.bin") as stream:
        assert stream.read() == data
    objects = gcs_emulator.objects(key)
    assert list(objects) == [f"{key}/blob.bin"] and int(objects[f"{key}/blob.bin"]["size"]) == len(data)


def test_open_output_compresses_by_extension(gcs_base):
    with storage.open_output(f"{gcs_base}/out/part-0.txt.gz") as out:
        out.write(b"A\tB\n" * 100)
    with storage.open_output(f"{gcs_base}/out/part-0.txt") as out:
        out.write(b"plain")

    with storage.open_input(f"{gcs_base}/out/part-0.txt.gz", compression=None) as raw:
        assert gzip.decompress(raw.read()) == b"A\tB\n" * 100
    assert storage.read_text(f"{gcs_base}/out/part-0.txt") == "plain"


def test_read_range(gcs_base):
    data = bytes(range(256)) * 1200  # 300 KiB
    storage.write_bytes(f"{gcs_base}/blob.bin", data)

    for offset, length in [(0, 10), (1000, 7), (70_000, 200_000), (len(data) - 5, 5), (17, 0)]:
        assert storage.read_range(f"{gcs_base}/blob.bin", offset, length) == data[offset : offset + length]
    with pytest.raises(EOFError, match="blob.bin"):
        storage.read_range(f"{gcs_base}/blob.bin", len(data) - 5, 6)
    with pytest.raises(ValueError):
        storage.read_range(f"{gcs_base}/blob.bin", -1, 5)


def test_read_chromosome_from_fasta_by_fai_offsets(gcs_base, tmp_path):
    # A FASTA indexed by pyfaidx locally, read back from the bucket by its
    # .fai offsets as preprocessing tasks will.
    fasta = tmp_path / "genome.fa"
    seqs = {"chr1": "ACGT" * 37 + "A", "chr2": "GGCCTTAA" * 20 + "TTT"}
    fasta.write_text(
        "".join(
            f">{name}\n" + "\n".join(s[i : i + 60] for i in range(0, len(s), 60)) + "\n" for name, s in seqs.items()
        )
    )
    Faidx(str(fasta)).close()
    for suffix in ("", ".fai"):
        storage.write_bytes(f"{gcs_base}/genome.fa{suffix}", (tmp_path / f"genome.fa{suffix}").read_bytes())

    for line in storage.read_text(f"{gcs_base}/genome.fa.fai").splitlines():
        name, length, offset, bases_per_line, bytes_per_line = line.split("\t")[:5]
        length, offset, bases_per_line, bytes_per_line = map(int, (length, offset, bases_per_line, bytes_per_line))
        full_lines, rest = divmod(length, bases_per_line)
        span = full_lines * bytes_per_line + rest
        raw = storage.read_range(f"{gcs_base}/genome.fa", offset, span)
        assert raw.replace(b"\n", b"").decode() == seqs[name]


def test_exists(gcs_base):
    storage.write_text(f"{gcs_base}/dir/file.txt", "x")

    assert storage.exists(f"{gcs_base}/dir/file.txt")
    assert storage.exists(f"{gcs_base}/dir")  # a prefix with objects under it
    assert not storage.exists(f"{gcs_base}/dir/missing.txt")
    assert not storage.exists(f"{gcs_base}/di")  # a name prefix is not a directory


@pytest.mark.parametrize(
    "read",
    [
        lambda uri, _: storage.read_text(uri),
        lambda uri, _: storage.open_text(uri),
        lambda uri, _: storage.open_input(uri),
        lambda uri, _: storage.read_range(uri, 0, 1),
        storage.stage_local,
    ],
    ids=["read_text", "open_text", "open_input", "read_range", "stage_local"],
)
def test_missing_object_error_names_the_uri(gcs_base, tmp_path, read):
    missing = f"{gcs_base}/nope/CTCF.train.labels.tsv.gz"
    with pytest.raises(FileNotFoundError) as err:
        read(missing, tmp_path)
    assert missing in str(err.value)


def test_list_files(gcs_base):
    for name in ["b/2.parquet", "a.parquet", "b/1.parquet", "b/c/manifest.json"]:
        storage.write_text(f"{gcs_base}/run/{name}", name)
    storage.write_text(f"{gcs_base}/run2/outside.parquet", "sibling prefix")
    storage.makedirs(f"{gcs_base}/run/empty")  # a directory marker object

    listed = storage.list_files(f"{gcs_base}/run")
    assert _relative(listed, f"{gcs_base}/run") == ["a.parquet", "b/1.parquet", "b/2.parquet", "b/c/manifest.json"]
    assert all(u.startswith("gs://") for u in listed)
    assert _relative(storage.list_files(f"{gcs_base}/run", suffix=".parquet"), f"{gcs_base}/run") == [
        "a.parquet",
        "b/1.parquet",
        "b/2.parquet",
    ]
    with pytest.raises(FileNotFoundError, match="nothing"):
        storage.list_files(f"{gcs_base}/nothing")
    with pytest.raises(NotADirectoryError):
        storage.list_files(f"{gcs_base}/run/a.parquet")


def test_delete_dir(gcs_emulator, gcs_base):
    key = gcs_base.split("/", 3)[3]
    storage.makedirs(f"{gcs_base}/marked/sub")  # with marker objects
    storage.write_text(f"{gcs_base}/marked/sub/x.txt", "x")
    storage.write_text(f"{gcs_base}/plain/y.txt", "y")  # no markers at all
    storage.write_text(f"{gcs_base}/plain2/z.txt", "sibling prefix survives")

    storage.delete_dir(f"{gcs_base}/marked")
    storage.delete_dir(f"{gcs_base}/plain")
    storage.delete_dir(f"{gcs_base}/never-there")

    # makedirs also left a marker for the test's own base directory.
    assert sorted(gcs_emulator.objects(key)) == [f"{key}/", f"{key}/plain2/z.txt"]
    assert not storage.exists(f"{gcs_base}/marked")
    with pytest.raises(ValueError, match="bucket"):
        storage.delete_dir(f"gs://{gcs_emulator.bucket}")


def test_replace_dir_writes_manifest_last_and_leaves_no_staging(gcs_emulator, gcs_base):
    key = gcs_base.split("/", 3)[3]
    staging, final = f"{gcs_base}/_staging/shards", f"{gcs_base}/shards"
    storage.write_text(f"{final}/manifest.json", '{"run": "old"}')
    storage.write_text(f"{final}/stale/part-9.parquet", "old run only")
    storage.makedirs(f"{staging}/records")
    names = [f"parquet/split=train/tf=CTCF/part-{i}.parquet" for i in range(12)] + ["records/train/part-0.rec"]
    for name in names:
        storage.write_text(f"{staging}/{name}", f"new {name}")
    storage.write_text(f"{staging}/manifest.json", '{"run": "new"}')

    storage.replace_dir(staging, final, commit_marker="manifest.json")

    objects = gcs_emulator.objects(key)
    assert not [name for name in objects if "/_staging/shards" in name]  # its parent's marker stays
    final_files = _relative(storage.list_files(final), final)
    assert final_files == sorted(names + ["manifest.json"])
    assert storage.read_text(f"{final}/manifest.json") == '{"run": "new"}'
    assert storage.read_text(f"{final}/{names[3]}") == f"new {names[3]}"
    # The service's own creation order: the manifest's generation is newer
    # than every other object's, so it was written after all of them.
    generations = {name: int(meta["generation"]) for name, meta in objects.items()}
    manifest = generations.pop(f"{key}/shards/manifest.json")
    assert generations and manifest > max(generations.values())


def test_replace_dir_missing_staging(gcs_base):
    storage.write_text(f"{gcs_base}/shards/manifest.json", "{}")
    with pytest.raises(FileNotFoundError, match="_staging"):
        storage.replace_dir(f"{gcs_base}/_staging", f"{gcs_base}/shards", commit_marker="manifest.json")
    # The published directory is untouched when there is nothing to swap in.
    assert storage.read_text(f"{gcs_base}/shards/manifest.json") == "{}"


def test_stage_local_copies_remote_file(gcs_base, tmp_path):
    data = gzip.compress(b"chr1\t10\t20\n")
    storage.write_bytes(f"{gcs_base}/peaks/DNASE.HepG2.bed.gz", data)

    path = storage.stage_local(f"{gcs_base}/peaks/DNASE.HepG2.bed.gz", tmp_path / "stage")

    assert path == str(tmp_path / "stage" / "DNASE.HepG2.bed.gz")
    with open(path, "rb") as handle:
        assert handle.read() == data
    assert [p.name for p in (tmp_path / "stage").iterdir()] == ["DNASE.HepG2.bed.gz"]  # no temporary left


def test_spark_tasks_read_gs_objects(spark, gcs_emulator, gcs_base):
    # Executors' Python workers build their own GcsFileSystem from the URI;
    # they reach the emulator only if STORAGE_EMULATOR_HOST reached them.
    uris = [f"{gcs_base}/task/part-{i}.txt.gz" for i in range(2)]
    for i, uri in enumerate(uris):
        storage.write_bytes(uri, gzip.compress(f"content {i}\n".encode()))

    def read(partition):
        import os as task_os

        from tfbs import storage as task_storage

        for uri in partition:
            yield task_os.getpid(), task_os.environ.get(task_storage.EMULATOR_ENV), task_storage.read_text(uri)

    rows = spark.sparkContext.parallelize(uris, 2).mapPartitions(read).collect()

    assert [text for _, _, text in rows] == ["content 0\n", "content 1\n"]
    assert {endpoint for _, endpoint, _ in rows} == {gcs_emulator.endpoint}
    assert os.getpid() not in {pid for pid, _, _ in rows}  # read in worker processes


def test_unreachable_hdfs_name_node_fails_fast_naming_it():
    started = time.monotonic()
    with pytest.raises(OSError) as err:
        storage.exists("hdfs://127.0.0.1:1/dream/labels/CTCF.train.labels.tsv.gz")
    assert str(err.value).startswith("hdfs://127.0.0.1:1: cannot reach the HDFS name node at 127.0.0.1:1")
    assert time.monotonic() - started < 15


def test_same_functions_on_file_uris(tmp_path):
    # The demo and tests run on file://: the new functions must agree there.
    base = storage.to_uri(tmp_path / "run")
    storage.write_text(f"{base}/b/1.parquet", "one")
    with storage.open_output(f"{base}/a.txt.gz") as out:
        out.write(b"zipped\n")
    storage.write_text(f"{tmp_path}/staging/manifest.json", "{}")
    storage.write_text(f"{tmp_path}/staging/part-0.rec", "rec")

    assert storage.list_files(base) == [f"{base}/a.txt.gz", f"{base}/b/1.parquet"]
    assert storage.read_text(f"{base}/a.txt.gz") == "zipped\n"
    assert storage.read_range(f"{base}/b/1.parquet", 1, 2) == b"ne"
    assert storage.stage_local(f"{base}/b/1.parquet", tmp_path / "unused") == str(tmp_path / "run" / "b" / "1.parquet")
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        storage.read_text(f"{base}/missing.txt")

    storage.replace_dir(storage.to_uri(tmp_path / "staging"), base, commit_marker="manifest.json")  # a rename locally
    assert storage.list_files(base) == [f"{base}/manifest.json", f"{base}/part-0.rec"]
    assert not (tmp_path / "staging").exists()


def test_the_emulator_serves_the_socket_bound_before_it_started(tmp_path):
    """The emulator's port is bound once, at import: nothing can take it before the emulator starts, and a
    client that connects in between is answered once it runs (no pick-then-bind race)."""
    import socket

    from gcs_emulator import _listening_socket, _start, _stop

    listening = _listening_socket()
    host, port = listening.getsockname()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as other, pytest.raises(OSError):
        other.bind((host, port))
    early = socket.create_connection((host, port), timeout=30)  # waits in the backlog, its request sent
    early.sendall(b"GET / HTTP/1.0\r\n\r\n")
    process = _start(listening, tmp_path / "emulator.log")
    try:
        answer = b""
        while chunk := early.recv(4096):
            answer += chunk
        assert answer.startswith(b"HTTP/1.0 200") and answer.rstrip().endswith(b"OK")
    finally:
        early.close()
        _stop(process)
