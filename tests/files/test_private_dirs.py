"""A user's caches on a shared machine: made private, refused when anyone else could touch them."""

from __future__ import annotations

import getpass
import hashlib
import hmac
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tfbs.storage.private_dirs import private_dir, records_cache, records_cache_location


def test_a_private_dir_is_made_mode_700_at_every_new_level(tmp_path):
    folder = private_dir(tmp_path / "tfbs-someone" / "records" / "abc")
    for level in (folder, folder.parent, folder.parent.parent):
        assert level.stat().st_mode & 0o777 == 0o700
    assert private_dir(folder) == folder  # as it is: accepted again


@pytest.mark.parametrize("defect", ["other_owner", "open_to_group", "a_link"])
def test_a_folder_anyone_else_could_write_in_is_refused(tmp_path, defect):
    target = tmp_path / "tfbs-someone" / "records"
    if defect == "a_link":
        (tmp_path / "elsewhere").mkdir(mode=0o700)
        target.parent.mkdir(mode=0o700)
        target.symlink_to(tmp_path / "elsewhere")
        reason = "a link or a file"
    else:
        target.mkdir(parents=True, mode=0o700)
        target.parent.chmod(0o700)
        if defect == "other_owner":
            os.chown(target, 65534, 65534)  # made first by another user (as root, this test may)
            reason = "owned by uid 65534"
        else:
            target.chmod(0o770)
            reason = "open to others (mode 770)"
    with pytest.raises(PermissionError, match=re.escape(reason)):
        private_dir(target)


def test_records_go_to_a_folder_of_the_user_named_by_its_own_key_by_default(monkeypatch, tmp_path):
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    monkeypatch.setattr("tfbs.storage.private_dirs.RECORDS_ROOT", str(tmp_path / "tfbs-{user}-{key}" / "records"))
    monkeypatch.setattr("tfbs.storage.private_dirs.user_cache_home", lambda: home / ".cache" / "tfbs")
    location = records_cache_location()
    secret = home / ".cache" / "tfbs" / "node" / "keys" / "name-key"
    key = hmac.new(secret.read_bytes(), b"records", hashlib.sha256).hexdigest()[:16]
    assert location == f"{tmp_path}/tfbs-{{user}}-{key}/records"  # each node's own user fills it in
    assert secret.stat().st_mode & 0o777 == 0o600 and len(secret.read_bytes()) == 32
    assert records_cache_location() == location  # the same secret: the same folder, run after run
    folder = records_cache(location)
    assert folder == tmp_path / f"tfbs-{getpass.getuser()}-{key}" / "records"
    assert folder.stat().st_mode & 0o777 == 0o700 and folder.stat().st_uid == os.geteuid()
    mine = records_cache(records_cache_location(str(tmp_path / "mine-{user}")))
    assert mine == tmp_path / f"mine-{getpass.getuser()}"
    # A secret others may read names nothing: whoever read it could take the folder first.
    secret.chmod(0o644)
    with pytest.raises(PermissionError, match=rf"^{secret}: not this user's alone"):
        records_cache_location()


@pytest.fixture
def shared_tmp():
    """A folder like /tmp (everyone may create in it, sticky), removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="tfbs-shared-", dir="/tmp"))
    folder.chmod(0o1777)
    yield folder
    shutil.rmtree(folder)


def test_another_user_can_neither_read_nor_take_the_cache(shared_tmp, code_for_everyone):
    """``nobody`` lists nothing in root's records, and its own cache lands in a folder of its own."""
    tmp_path = shared_tmp
    ours = private_dir(tmp_path / "tfbs-root" / "records")
    (ours / "part-00000.rec").write_bytes(b"private records")
    script = (
        "import sys; sys.path.insert(0, sys.argv[1]); from pathlib import Path\n"
        "try:\n    print(list(Path(sys.argv[2]).iterdir()))\nexcept PermissionError as e:\n    print('refused')\n"
        "from tfbs.storage.private_dirs import records_cache, records_cache_location\n"
        "print(records_cache(records_cache_location(sys.argv[3] + '/tfbs-{user}/records')))\n"
    )
    done = subprocess.run(
        ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", sys.executable, "-c", script,
         str(code_for_everyone), str(ours), str(tmp_path)],
        capture_output=True, text=True, timeout=60, cwd="/",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["refused", f"{tmp_path}/tfbs-nobody/records"]


#: A uid no user of the machine has (named by its number, as a container's user may be).
UNNAMED_UID = 54321


def test_root_s_folders_noted_before_a_user_namespace_are_still_root_s_in_it(shared_tmp, code_for_everyone):
    """A TF node not run by root enters a user namespace of its own (``tf_models.tfos.private_network``),
    where root's folders show as the overflow uid's: its record cache, under the shared sticky folder,
    is refused there, unless root's folders were noted before, as the node's Spark task does
    (``PRIVATE_FOLDERS_ARG``). (Not as ``nobody``: its uid is the overflow uid, so root's folders
    would look like its own.)"""
    script = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "from tfbs.storage.private_dirs import note_root_folders, records_cache\n"
        "from tf_models.tfos.private_network import _unshare_network\n"
        "location = sys.argv[2] + '/tfbs-{user}-key/records'\n"
        "if sys.argv[3] == 'before':\n    note_root_folders([location])\n"
        # as a node does: a forked child, single-threaded (the imports started threads), unshares
        "import os\nif os.fork() == 0:\n    _unshare_network()\n"
        "    try:\n        print(records_cache(location), flush=True)\n"
        "    except PermissionError as error:\n        print('refused:', error, flush=True)\n"
        "    os._exit(0)\n"
        "os.wait()\n"
    )
    others = shared_tmp / "another-user-s"  # sticky and open, like /tmp, but not root's
    others.mkdir()
    others.chmod(0o1777)
    os.chown(others, UNNAMED_UID + 1, UNNAMED_UID + 1)
    outcomes = {}
    for container, when in ((shared_tmp, "inside"), (shared_tmp, "before"), (others, "before")):
        done = subprocess.run(
            ["setpriv", f"--reuid={UNNAMED_UID}", f"--regid={UNNAMED_UID}", "--clear-groups", sys.executable, "-c",
             script, str(code_for_everyone), str(container), when],
            capture_output=True, text=True, timeout=120, cwd="/",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        outcomes[container.name, when] = done.stdout.strip()
    overflow_uid = Path("/proc/sys/kernel/overflowuid").read_text().strip()
    refused = f"owned by uid {overflow_uid}, who could replace"
    assert outcomes[shared_tmp.name, "inside"].startswith(f"refused: {shared_tmp}: {refused}")
    assert outcomes[shared_tmp.name, "before"] == f"{shared_tmp}/tfbs-{UNNAMED_UID}-key/records"
    # Noting trusts root's folders alone: another user's stays refused.
    assert outcomes[others.name, "before"].startswith(f"refused: {others}: {refused}")
