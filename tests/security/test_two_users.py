"""Two users of one machine train at once with the default configuration.

``root`` and ``nobody`` each run ``tfbs train`` (ParameterServerStrategy
on ``local-cluster[4,1,1024]``, each TF node in a private network) on the
same shards at the same time: neither fails, each record cache (where a
node copies remote record files) is its user's own, mode 700, and the
other user cannot list root's.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import DEMO_CONFIG, MOTIFS_FOR_EVERYONE, REPO, SHARED_TMP, SMALL_OVERRIDES

from tfbs.config import load_config
from tfbs.storage import local_path
from tfbs.storage.private_dirs import PREDICTABLE_RECORDS_ROOT, records_cache_location

pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.slow]

OTHER_USER = "nobody"
AS_OTHER_USER = ["setpriv", f"--reuid={OTHER_USER}", "--regid=nogroup", "--clear-groups"]


@pytest.fixture
def shared_inputs(spark, small_dataset, code_for_everyone) -> Iterator[Path]:
    """The small data set and its shards where any user may read them, and a folder per user."""
    from preprocess.build_shards import build_shards

    folder = Path(tempfile.mkdtemp(prefix="tfbs-two-users-", dir=SHARED_TMP))
    try:
        shutil.copytree(local_path(small_dataset.data.root), folder / "data")
        # Built here: a manifest names its record files where they were written.
        config = load_config(DEMO_CONFIG, [*SMALL_OVERRIDES, f"run_dir={folder / 'shared'}",
                                           f"data.root={folder / 'data'}"])  # fmt: skip
        build_shards(spark, config)
        (folder / "shards").symlink_to(local_path(config.shards_uri))
        for user in ("root", OTHER_USER):
            (folder / user).mkdir()
            shutil.chown(folder / user, user)
        subprocess.run(["chmod", "-R", "a+rX", str(folder)], check=True)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(PREDICTABLE_RECORDS_ROOT.format(user=OTHER_USER).removesuffix("/records"), ignore_errors=True)


def _train(folder: Path, code: Path, user: str) -> subprocess.Popen[str]:
    """``tfbs train`` as ``user``, from ``code`` (a copy any user reads: the clone may be private to root)."""
    home = folder / user
    command = [sys.executable, "-m", "jobs.train", "--config", str(code / DEMO_CONFIG.relative_to(REPO))]
    motifs = code / MOTIFS_FOR_EVERYONE
    for override in [*SMALL_OVERRIDES, f"run_dir={home / 'run'}", f"data.root={folder / 'data'}",
                     f"shards_dir={folder / 'shards'}", f"generate.motif_db={motifs}"]:  # fmt: skip
        command += ["--set", override]
    # PYTHONPATH: Spark's executors and Python workers, started as the user, import the copy too.
    env = {**os.environ, "HOME": str(home), "TMPDIR": str(home), "PYTHONPATH": str(code)}
    if user != "root":
        command = [*AS_OTHER_USER, *command]
    return subprocess.Popen(command, cwd=code, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_two_users_train_at_once_each_with_a_cache_of_its_own(shared_inputs, code_for_everyone):
    runs = {user: _train(shared_inputs, code_for_everyone, user) for user in ("root", OTHER_USER)}
    outputs = {user: run.communicate(timeout=900)[0] for user, run in runs.items()}
    # root's cache has a name only root can compute (a key from a secret in its home); nobody has no home
    # for the secret, so its cache keeps the predictable name, and the run says so.
    caches = {
        "root": records_cache_location().format(user="root"),
        OTHER_USER: PREDICTABLE_RECORDS_ROOT.format(user=OTHER_USER),
    }
    assert caches["root"].startswith("/tmp/tfbs-root-") and len(caches["root"]) == len("/tmp/tfbs-root-/records") + 16
    assert "a name another user could take first" in outputs[OTHER_USER]
    for user, run in runs.items():
        assert run.returncode == 0, (user, outputs[user][-4000:])
        (export,) = (shared_inputs / user / "run").glob("models/*/export/saved_model.pb")
        assert export.stat().st_uid == pwd.getpwnam(user).pw_uid
        cache = Path(caches[user])
        assert cache.stat().st_uid == pwd.getpwnam(user).pw_uid and cache.stat().st_mode & 0o777 == 0o700
    peek = subprocess.run(
        [*AS_OTHER_USER, sys.executable, "-c", f"import os; os.listdir({caches['root']!r})"],
        capture_output=True, text=True, timeout=60, cwd="/",
    )  # fmt: skip
    assert peek.returncode != 0 and "PermissionError" in peek.stderr
