"""``tfbs.launch.kerberos``: a ticket of one's own from a keytab, the one place the project runs ``kinit``.

``kinit`` and ``kdestroy`` here are stand-ins on ``PATH`` that record what
they were given and write the cache file ``KRB5CCNAME`` names; the real
ones, against a real KDC, run in the hosts session (the DAG on the secured
YARN, ``scripts/submit_yarn.sh`` in ``tests/cluster/test_host_failures.py``).
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from tfbs.errors import TfbsError
from tfbs.launch import kerberos

#: A kinit that writes its arguments to the cache, or refuses the principal "mallory".
_KINIT = """#!/bin/sh
case "$3" in mallory) echo "kinit: Client 'mallory@EXAMPLE' not found in Kerberos database" >&2; exit 1 ;; esac
printf '%s\\n' "$@" > "${KRB5CCNAME#FILE:}"
"""


@pytest.fixture
def fake_kerberos(tmp_path, monkeypatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "kinit").write_text(_KINIT)
    (bin_dir / "kdestroy").write_text('#!/bin/sh\nrm -f "${KRB5CCNAME#FILE:}"\n')
    for tool in ("kinit", "kdestroy"):
        (bin_dir / tool).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    return bin_dir


def test_a_ticket_of_its_own_in_a_private_cache_gone_after(fake_kerberos, tmp_path):
    with kerberos.own_ticket("alice@EXAMPLE", "/keytabs/alice.keytab") as env:
        cache = Path(env["KRB5CCNAME"].removeprefix("FILE:"))
        assert cache.read_text().split() == ["-kt", "/keytabs/alice.keytab", "alice@EXAMPLE"]
        assert stat.S_IMODE(cache.parent.stat().st_mode) == 0o700
    assert not cache.parent.exists()


def test_a_refused_login_names_the_principal_keytab_and_reason(fake_kerberos):
    with pytest.raises(TfbsError) as refused, kerberos.own_ticket("mallory", "/keytabs/m.keytab"):
        pytest.fail("no ticket, no block")
    assert str(refused.value) == (
        "kinit mallory from /keytabs/m.keytab: kinit: Client 'mallory@EXAMPLE' not found in Kerberos database"
    )


def test_the_command_line_runs_a_command_with_the_ticket_or_fills_a_cache(fake_kerberos, tmp_path, capsys):
    seen = tmp_path / "seen"
    show = [
        sys.executable,
        "-c",
        f"import os, sys; open({str(seen)!r}, 'w').write(os.environ['KRB5CCNAME']); sys.exit(7)",
    ]
    assert kerberos.main(["--principal", "alice", "--keytab", "k", "--", *show]) == 7
    cache = Path(seen.read_text().removeprefix("FILE:"))
    assert cache.name == "cc" and not cache.parent.exists()

    given = tmp_path / "task-cache"
    assert kerberos.main(["--principal", "alice", "--keytab", "k", "--cache", f"FILE:{given}"]) == 0
    assert given.read_text().split() == ["-kt", "k", "alice"]

    assert kerberos.main(["--principal", "mallory", "--keytab", "k", "--cache", f"FILE:{given}x"]) == 2
    assert capsys.readouterr().err.startswith("error: kinit mallory from k: kinit: Client 'mallory@EXAMPLE'")
    with pytest.raises(SystemExit):
        kerberos.main(["--principal", "alice", "--keytab", "k"])
