"""What the Python HDFS client needs from the Hadoop client configuration.

hdfs-native reads ``$HADOOP_CONF_DIR`` for the name node and security
itself; this module answers the one question it leaves to its caller: which
host name a delegation token is filed under.
"""

from __future__ import annotations

import os
import socket
import xml.etree.ElementTree as ElementTree
from pathlib import Path

#: Set by YARN in a container (and by ``hdfs fetchdt`` users): the delegation tokens of the application.
TOKEN_FILE_ENV = "HADOOP_TOKEN_FILE_LOCATION"
#: The executor plugin's copy of the container's current tokens, beside YARN's file
#: (``tfbs/launch/java/CurrentTokensPlugin.java``, :mod:`tfbs.launch.current_tokens`).
CURRENT_TOKENS_NAME = "tfbs-current-tokens"


def hadoop_setting(name: str, default: str, conf_dir: str | None = None) -> str:
    """A property of ``core-site.xml`` in ``conf_dir`` (default ``$HADOOP_CONF_DIR``), else ``default``."""
    folder = conf_dir if conf_dir is not None else os.environ.get("HADOOP_CONF_DIR", "")
    path = Path(folder) / "core-site.xml"
    if not folder or not path.is_file():
        return default
    for prop in ElementTree.parse(path).getroot().iter("property"):
        if prop.findtext("name", "").strip() == name:
            return prop.findtext("value", default).strip()
    return default


def use_current_tokens() -> str | None:
    """Point this process's HDFS clients at the container's current tokens, where the plugin keeps them.

    YARN's token file holds the tokens of the container's launch; on a
    keytab login Spark replaces them in the executor JVM before they expire,
    and the executor plugin (:mod:`tfbs.launch.current_tokens`) copies the current
    ones beside that file. hdfs-native reads the file ``HADOOP_TOKEN_FILE_LOCATION``
    names for each new connection, so pointing it at the copy, which the
    plugin replaces whole, keeps a long-lived process (a TF node) on valid
    tokens. Elsewhere (no token file, or no copy) nothing changes.

    Returns
    -------
    str or None
        The token file now in use, or None outside a container with tokens.
    """
    launched = os.environ.get(TOKEN_FILE_ENV)
    if not launched:
        return None
    current = Path(launched).with_name(CURRENT_TOKENS_NAME)
    if current.is_file():
        os.environ[TOKEN_FILE_ENV] = str(current.resolve())
    return os.environ[TOKEN_FILE_ENV]


def token_service_host(host: str) -> str:
    """The host name under which a delegation token for the name node at ``host`` is filed.

    Hadoop's clients file a token under the name node's address unless
    ``hadoop.security.token.service.use_ip`` is false; hdfs-native picks the
    token whose service is the very ``host:port`` it connects to. So where a
    token file is in use (a YARN container), connect by that address. Elsewhere,
    or when ``host`` does not resolve (an HA name service), ``host`` itself.
    """
    if not os.environ.get(TOKEN_FILE_ENV):
        return host
    if hadoop_setting("hadoop.security.token.service.use_ip", "true").lower() != "true":
        return host
    try:
        return socket.gethostbyname(host)
    except OSError:
        return host
