"""Spark web UIs only their run can open: Spark's JWS filter, keyed per session, and its token.

On one machine every user reaches loopback, so the driver's UI and a
``local-cluster``'s master and worker UIs would show any of them the run's
stages, environment and executor logs. Spark's own ``JWSFilter`` answers a
request only when it carries ``Authorization: Bearer <token>`` signed with
the filter's key; :func:`ui_key_and_token` draws that key per session, and
:func:`save_token` leaves the token where only this user can read it::

    curl -H "Authorization: Bearer $(cat /tmp/tfbs-$(id -un)/spark-ui/<app id>.jws)" http://127.0.0.1:4040/

A configuration's own ``spark.ui.filters`` (``""`` for none) wins.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path

from tfbs.storage.private_dirs import user_temp_dir, user_temp_path

#: Spark's servlet filter that wants a JSON Web Signature with every request (Spark 4.0+).
UI_FILTER = "org.apache.spark.ui.JWSFilter"

#: The filter's key (base64url, 256 bits for HS256), a secret: never on a command line.
UI_KEY = f"spark.{UI_FILTER}.param.secretKey"


def _base64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def bearer_token(key: bytes, subject: str) -> str:
    """A JSON Web Signature (HS256) of ``{"sub": subject}`` with ``key``: what the filter lets in.

    >>> token = bearer_token(bytes(32), "tfbs")
    >>> token.split(".")[0]  # {"alg":"HS256","typ":"JWT"}
    'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9'
    >>> len(token.split("."))
    3
    """
    header = _base64url(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())
    payload = _base64url(json.dumps({"sub": subject}, separators=(",", ":")).encode())
    signature = hmac.new(key, f"{header}.{payload}".encode(), hashlib.sha256).digest()
    return f"{header}.{payload}.{_base64url(signature)}"


def ui_key_and_token(subject: str) -> tuple[str, str]:
    """A key for the session's web UIs drawn now (the value of :data:`UI_KEY`), and the token that opens them.

    Parameters
    ----------
    subject
        Who the token names (the application), for the UI's own logs.

    Returns
    -------
    key : str
        The filter's key, base64url.
    token : str
        The bearer token (:func:`bearer_token`).
    """
    key = secrets.token_bytes(32)
    return _base64url(key), bearer_token(key, subject)


def token_path(app_id: str) -> Path:
    """Where :func:`save_token` leaves application ``app_id``'s token: ``<tmp>/tfbs-<user>/spark-ui/``."""
    return user_temp_path("spark-ui") / f"{app_id}.jws"


def save_token(token: str, app_id: str) -> Path:
    """Write ``token`` to :func:`token_path` (mode 600, in a folder checked to be this user's alone)."""
    path = user_temp_dir("spark-ui") / f"{app_id}.jws"
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(descriptor, "w") as out:
        out.write(token)
    return path


def request_headers(app_id: str) -> dict[str, str]:
    """What a request of this process to application ``app_id``'s own UI sends: its token, if it saved one.

    The driver's REST calls to its own UI (task placement, :mod:`tf_models.tfos.spark_status`)
    pass the filter like any other caller.
    """
    path = token_path(app_id)
    return {"Authorization": f"Bearer {path.read_text()}"} if path.is_file() else {}
