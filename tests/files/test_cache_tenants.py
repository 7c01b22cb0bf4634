"""Caches no other user of the machine can block or feed (issue 43).

The user is the process's uid, never ``$USER``; a shared parent counts
only when root owns it; a folder another user made first at the
predictable ``<tmp>/tfbs-<user>`` (any mode, sticky included) is neither
used nor in the way; a cache that holds code (the JVM plugin's jar, the
driver's class archive) is loaded only when this user owns it and no one
else may write it.

These tests run as root (CI does) to play the other user: they give
files to ``nobody`` (uid 65534) with ``chown``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import pwd
import subprocess
import sys

import pytest

from tfbs.storage import private_dirs
from tfbs.storage.private_dirs import is_own_file, private_dir, user_name, user_root, user_temp_dir

NOBODY = 65534


@pytest.fixture
def root() -> None:
    """These tests play another user with ``chown``: without root they fail, saying so (they never skip)."""
    assert os.geteuid() == 0, "these tests give files to another user with chown: run them as root (CI does)"


needs_root = pytest.mark.usefixtures("root")


@pytest.fixture
def machine(tmp_path, monkeypatch):
    """A shared temporary folder like /tmp (root's, sticky, open to all) and a home of this user's, for the test."""
    shared = tmp_path / "tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    monkeypatch.setattr("tempfile.tempdir", str(shared))
    monkeypatch.setattr(private_dirs, "user_cache_home", lambda: home / ".cache" / "tfbs")
    return shared, home


def test_the_user_is_the_process_s_uid_not_the_environment(monkeypatch, machine):
    shared, _ = machine
    monkeypatch.setenv("USER", "mallory")
    monkeypatch.setenv("LOGNAME", "mallory")
    own = pwd.getpwuid(os.getuid()).pw_name
    assert user_name() == own
    assert user_root() == shared / f"tfbs-{own}"


@needs_root
def test_another_uid_gets_its_own_name_whatever_user_it_claims(code_for_everyone):
    script = "import sys; sys.path.insert(0, sys.argv[1]); from tfbs.storage.private_dirs import user_name; print(user_name())"
    done = subprocess.run(
        ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", sys.executable, "-c", script, str(code_for_everyone)],
        env={**os.environ, "USER": "root", "LOGNAME": "root"},
        capture_output=True, text=True, timeout=60, cwd="/",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == pwd.getpwuid(NOBODY).pw_name


@needs_root
def test_a_sticky_parent_is_trusted_only_when_root_owns_it(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    assert private_dir(shared / "tfbs-x" / "records").stat().st_mode & 0o777 == 0o700  # root's: trusted
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    theirs.chmod(0o1777)
    os.chown(theirs, NOBODY, NOBODY)  # sticky, but its owner may still swap what is in it
    with pytest.raises(PermissionError, match=rf"^{theirs}: owned by uid {NOBODY}, who could replace"):
        private_dir(theirs / "tfbs-x" / "records")
    # Nor a folder anyone may write in that is not sticky: anyone could rename the user's root away.
    open_to_all = tmp_path / "open"
    open_to_all.mkdir()
    open_to_all.chmod(0o777)
    with pytest.raises(PermissionError, match=rf"^{open_to_all}: anyone may replace .* \(mode 777, not sticky\)"):
        private_dir(open_to_all / "tfbs-x" / "records")


@needs_root
@pytest.mark.parametrize("mode", [0o700, 0o755, 0o777, 0o1777])
def test_another_user_s_folder_at_the_old_location_neither_stops_nor_feeds_the_run(machine, mode, caplog):
    shared, home = machine
    squatted = shared / f"tfbs-{user_name()}"
    squatted.mkdir()
    os.chown(squatted, NOBODY, NOBODY)
    squatted.chmod(mode)
    with caplog.at_level(logging.WARNING, logger="tfbs.storage.private_dirs"):
        exports = user_temp_dir("exports")
    # The run goes on in a folder of its own, under its home, private.
    assert exports == home / ".cache" / "tfbs" / "node" / "exports"
    info = exports.stat()
    assert info.st_uid == os.geteuid() and info.st_mode & 0o777 == 0o700
    assert f"{squatted} is not this user's (another user made it first): using " in caplog.text
    # Nothing of the run in the squatter's folder; what the squatter puts there is never read.
    assert list(squatted.iterdir()) == []
    assert user_temp_dir("mirrors").parent == exports.parent


@needs_root
def test_a_link_at_the_old_location_is_not_followed(machine):
    shared, home = machine
    elsewhere = shared / "planted"
    elsewhere.mkdir()
    (shared / f"tfbs-{user_name()}").symlink_to(elsewhere)
    assert user_temp_dir("exports").is_relative_to(home)
    assert list(elsewhere.iterdir()) == []


def test_a_folder_of_the_user_s_own_stays_where_it_was(machine):
    shared, _ = machine
    assert user_temp_dir("exports") == shared / f"tfbs-{user_name()}" / "exports"
    assert user_temp_dir("exports") == shared / f"tfbs-{user_name()}" / "exports"  # as it is: accepted again


@needs_root
@pytest.mark.parametrize("defect", ["other_owner", "group_writable", "folder_writable", "a_link"])
def test_code_is_loaded_only_from_the_user_s_own_unwritable_files(tmp_path, defect):
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o755)
    code = folder / "code.jar"
    code.write_bytes(b"PK")
    code.chmod(0o644)
    assert is_own_file(code)
    if defect == "other_owner":
        os.chown(code, NOBODY, NOBODY)
    elif defect == "group_writable":
        code.chmod(0o664)
    elif defect == "folder_writable":
        folder.chmod(0o777)  # anyone may replace the file
    else:
        code.rename(folder / "real.jar")
        code.symlink_to(folder / "real.jar")
    assert not is_own_file(code)


@needs_root
def test_a_plugin_jar_another_user_planted_is_refused_not_shipped(tmp_path):
    import pyspark

    from tfbs.launch.current_tokens import SOURCE, plugin_jar

    key = hashlib.sha256(SOURCE.read_bytes() + pyspark.__version__.encode()).hexdigest()[:16]
    planted = tmp_path / f"tfbs-current-tokens-{key}.jar"
    planted.write_bytes(b"PK not ours")
    os.chown(planted, NOBODY, NOBODY)
    with pytest.raises(PermissionError, match=rf"^{planted}: not this user's own file"):
        plugin_jar(tmp_path)


@needs_root
def test_a_class_archive_another_user_owns_is_not_mapped(tmp_path, caplog):
    from tfbs.launch import USE_OPTION, archive_path, with_archive
    from tfbs.launch.class_archive import build_archive

    archive = archive_path(tmp_path)
    archive.write_bytes(b"not a real archive")
    archive.chmod(0o644)
    assert with_archive("-Xmx1g", tmp_path) == f"-Xmx1g {USE_OPTION}{archive}"  # the user's own: mapped
    os.chown(archive, NOBODY, NOBODY)
    with caplog.at_level(logging.WARNING, logger="tfbs.launch"):
        assert with_archive("-Xmx1g", tmp_path) == "-Xmx1g"
    assert f"class archive {archive} is not this user's own" in caplog.text
    with pytest.raises(PermissionError, match=rf"^{archive}: not this user's own file"):
        build_archive(tmp_path)


@needs_root
@pytest.mark.parametrize("mode", [0o700, 0o755, 0o777, 0o1777])
def test_another_user_s_folder_at_the_record_cache_s_old_location_is_not_in_its_way(machine, mode, monkeypatch):
    """The record cache's name carries a key only this user can compute: a squatter's folder at the old,
    predictable ``<tmp>/tfbs-<user>/records`` neither stops the run nor receives a record."""
    shared, home = machine
    monkeypatch.setattr(private_dirs, "RECORDS_ROOT", f"{shared}/tfbs-{{user}}-{{key}}/records")
    squatted = shared / f"tfbs-{user_name()}"
    (squatted / "records").mkdir(parents=True)
    for folder in (squatted / "records", squatted):
        os.chown(folder, NOBODY, NOBODY)
        folder.chmod(mode)
    cache = private_dirs.records_cache(private_dirs.records_cache_location())
    assert cache.parent.name.startswith(f"tfbs-{user_name()}-") and cache.parent.parent == shared
    assert cache.stat().st_uid == os.geteuid() and cache.stat().st_mode & 0o777 == 0o700
    assert list((squatted / "records").iterdir()) == []
    # Nor can the squatter name the next one: the key is the user's, from a secret only the user reads.
    secret = home / ".cache" / "tfbs" / "node" / "keys" / private_dirs.NAME_KEY_FILE
    assert secret.stat().st_uid == os.geteuid() and secret.stat().st_mode & 0o777 == 0o600
