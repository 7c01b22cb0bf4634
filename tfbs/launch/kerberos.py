"""A Kerberos ticket of one's own, from a keytab: the one place the project runs ``kinit``.

The pipeline's clients (the driver's HDFS client, ``hdfs-native``; Spark's
launcher) read the ticket cache ``KRB5CCNAME`` names. A submission that
logs in from a keytab gets a cache of its own, in a private folder, so two
submissions never share or overwrite a ticket, and the cache goes when the
submission ends.

``python -m tfbs.launch.kerberos --principal P --keytab K -- COMMAND ...`` runs a
command with such a ticket (``scripts/submit_yarn.sh``); ``--cache
FILE:<path>`` only writes the ticket to a cache the caller owns and removes
(the Airflow tasks, which hand it to the provider's ``spark-submit``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator

from tfbs.errors import TfbsError


def login(principal: str, keytab: str, cache: str) -> None:
    """Write a ticket of ``principal`` from ``keytab`` to the cache ``cache`` (``FILE:<path>``).

    Raises
    ------
    TfbsError
        If ``kinit`` refuses (a wrong keytab or principal), with its reason.
    """
    done = subprocess.run(
        ["kinit", "-kt", keytab, principal], env={**os.environ, "KRB5CCNAME": cache}, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise TfbsError(f"kinit {principal} from {keytab}: {done.stderr.strip() or f'exit code {done.returncode}'}")


@contextlib.contextmanager
def own_ticket(principal: str, keytab: str) -> Iterator[dict[str, str]]:
    """A ticket of ``principal`` in a private cache for the block; the environment that names it."""
    folder = tempfile.mkdtemp(prefix="tfbs-krb5cc-")
    cache = f"FILE:{folder}/cc"
    try:
        login(principal, keytab, cache)
        yield {"KRB5CCNAME": cache}
    finally:
        subprocess.run(["kdestroy", "-q"], env={**os.environ, "KRB5CCNAME": cache}, capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    """Run a command with a ticket of its own, or write one to a given cache; the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--principal", required=True)
    parser.add_argument("--keytab", required=True)
    parser.add_argument("--cache", help="write the ticket to this cache (FILE:<path>) and stop")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ...: run it with the ticket")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if bool(args.cache) == bool(command):
        parser.error("give either --cache or -- COMMAND")
    try:
        if args.cache:
            login(args.principal, args.keytab, args.cache)
            return 0
        with own_ticket(args.principal, args.keytab) as ticket:
            return subprocess.run(command, env={**os.environ, **ticket}).returncode
    except TfbsError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
