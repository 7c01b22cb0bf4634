"""Connections sealed with a run's secret: both ends authenticated, every byte encrypted, no replay.

Used by the reservation exchange (:mod:`tf_models.tfos.reservation`); the TF
network's tunnels speak TLS 1.3 (:mod:`tf_models.tfos.network_tls`). A connection opens with
a handshake:

1. the client sends 32 random bytes and a hello (what it asks for, e.g. the
   TF task it wants to reach) sealed under a key derived from the run's
   secret and those bytes: the server answers nothing, and closes, unless
   the hello opens, so a caller without the secret gets no byte back;
2. the server answers 32 random bytes of its own and a sealed "ok"; both
   sides derive one key per direction from the secret, the channel's label
   and both nonces (HKDF-SHA256), so every connection has keys no earlier
   one had: a recorded conversation replayed to a server gets a fresh
   nonce, and nothing after its hello opens.

Every message after that is a frame, ``length (4 bytes) | ChaCha20-Poly1305
ciphertext``, the nonce a per-direction counter. A frame that does not
open, a length out of bounds or a handshake that does not finish within its
deadline ends the connection (:class:`Refused`). ChaCha20-Poly1305 and HKDF
come from ``cryptography`` (pyca), a maintained library with constant-time
primitives; nothing here implements a cipher.
"""

from __future__ import annotations

import os
import socket
import struct
import time
from dataclasses import dataclass, field
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

#: Bytes of a run's secrets (256 bits).
SECRET_BYTES = 32
#: Random bytes each side contributes to a connection's keys.
NONCE_BYTES = 32
#: The largest sealed frame accepted (ciphertext), in bytes.
MAX_FRAME_BYTES = 1 << 20
#: Bytes read from a socket at a time.
CHUNK_BYTES = 1 << 16
_LENGTH = struct.Struct(">I")
_TAG_BYTES = 16


class HiddenBytes(bytes):
    """Bytes whose ``repr`` and ``str`` hide the value.

    TFoS logs whole node records at INFO (``TFSparkNode.reserve: {...}``,
    ``node: {...}``) and the records hold each node's manager authkey.
    Keys and secrets of this type print as ``<redacted>`` wherever they
    end up.
    """

    def __repr__(self) -> str:
        return "<redacted>"

    __str__ = __repr__

    def __reduce__(self) -> tuple[Any, ...]:
        return (HiddenBytes, (bytes(self),))


class Refused(Exception):
    """A peer without the secret, a replayed or tampered frame, or a handshake out of time."""


@dataclass
class FrameCipher:
    """One direction of a connection: seals or opens its frames in order.

    The nonce of frame n is n itself (12 bytes, big-endian): a key is never
    used twice with one nonce, and a frame dropped, repeated or reordered
    does not open.
    """

    key: bytes
    counter: int = 0
    aead: ChaCha20Poly1305 = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.aead = ChaCha20Poly1305(self.key)

    def _nonce(self) -> bytes:
        nonce = self.counter.to_bytes(12, "big")
        self.counter += 1
        return nonce

    def seal(self, payload: bytes) -> bytes:
        """``payload`` as a frame: its length, then its ciphertext."""
        ciphertext = self.aead.encrypt(self._nonce(), payload, None)
        return _LENGTH.pack(len(ciphertext)) + ciphertext

    def open(self, ciphertext: bytes) -> bytes:
        """The payload of the next frame's ciphertext.

        Raises
        ------
        Refused
            If it does not open under this key and the next nonce.
        """
        try:
            return self.aead.decrypt(self._nonce(), ciphertext, None)
        except InvalidTag:
            raise Refused("a frame that does not open under the run's secret") from None


def frame_length(header: bytes) -> int:
    """The ciphertext length a frame header announces.

    Raises
    ------
    Refused
        If it is out of bounds (shorter than a tag, or over :data:`MAX_FRAME_BYTES`).
    """
    (length,) = _LENGTH.unpack(header)
    if not _TAG_BYTES <= length <= MAX_FRAME_BYTES:
        raise Refused(f"a frame of {length} bytes")
    return length


def _key(secret: bytes, salt: bytes, info: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=salt, info=info).derive(secret)


def hello_cipher(secret: bytes, label: bytes, client_nonce: bytes) -> FrameCipher:
    """The cipher of a connection's first frame, the client's hello (keyed by its nonce alone)."""
    return FrameCipher(_key(secret, client_nonce, label + b"\0hello"))


def opening(secret: bytes, label: bytes, hello: bytes) -> tuple[bytes, bytes]:
    """The client's first bytes, ``nonce | sealed hello``, and its nonce."""
    client_nonce = os.urandom(NONCE_BYTES)
    return client_nonce + hello_cipher(secret, label, client_nonce).seal(hello), client_nonce


def answer(secret: bytes, label: bytes, client_nonce: bytes) -> tuple[bytes, dict[str, FrameCipher]]:
    """The server's answer to a hello that opened, ``nonce | sealed ok``, and the connection's ciphers."""
    server_nonce = os.urandom(NONCE_BYTES)
    ciphers = derive_ciphers(secret, label, client_nonce, server_nonce)
    return server_nonce + ciphers["to_client"].seal(b"ok"), ciphers


def derive_ciphers(secret: bytes, label: bytes, client_nonce: bytes, server_nonce: bytes) -> dict[str, FrameCipher]:
    """The two directions' ciphers of one connection: ``{"to_server": ..., "to_client": ...}``.

    Parameters
    ----------
    secret : bytes
        The run's secret (32 bytes).
    label : bytes
        What the channel is for (``b"tfbs reservations"``): keys of one
        channel never open another's frames.
    client_nonce, server_nonce : bytes
        The handshake's random bytes.
    """
    salt = client_nonce + server_nonce
    return {way: FrameCipher(_key(secret, salt, label + b"\0" + way.encode())) for way in ("to_server", "to_client")}


class SealedSocket:
    """A blocking socket speaking sealed frames (:func:`connect_sealed`, :func:`accept_sealed`)."""

    def __init__(self, sock: socket.socket, send: FrameCipher, receive: FrameCipher) -> None:
        self.sock = sock
        self._send = send
        self._receive = receive

    def send(self, payload: bytes) -> None:
        """Send ``payload`` as one sealed frame."""
        self.sock.sendall(self._send.seal(payload))

    def receive(self, within_s: float | None = None) -> bytes:
        """The next frame's payload, whole within ``within_s`` seconds (``None``: the socket's timeout).

        Raises
        ------
        Refused
            If the frame does not open or its length is out of bounds.
        ConnectionError, TimeoutError
            If the peer closes first or the deadline passes.
        """
        deadline = None if within_s is None else time.monotonic() + within_s
        return self._receive.open(_read_frame(self.sock, deadline))

    def close(self) -> None:
        """Close the socket."""
        self.sock.close()


def _receive_exactly(sock: socket.socket, size: int, deadline: float | None) -> bytes:
    """``size`` bytes from ``sock`` by ``deadline`` (``time.monotonic()``), else ConnectionError/TimeoutError."""
    chunks, left = [], size
    while left:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("the peer did not send in time")
            sock.settimeout(remaining)
        chunk = sock.recv(min(left, CHUNK_BYTES))
        if not chunk:
            raise ConnectionError("the peer closed the connection")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _read_frame(sock: socket.socket, deadline: float | None) -> bytes:
    """The next frame's ciphertext from ``sock``, its length checked first."""
    return _receive_exactly(sock, frame_length(_receive_exactly(sock, _LENGTH.size, deadline)), deadline)


def connect_sealed(sock: socket.socket, secret: bytes, label: bytes, hello: bytes, within_s: float) -> SealedSocket:
    """The client's handshake on a connected ``sock``; returns the sealed connection.

    Raises
    ------
    Refused
        If the server's answer does not open (it does not hold the secret).
    ConnectionError, TimeoutError
        If the server closes (it refused the hello) or stalls within ``within_s``.
    """
    deadline = time.monotonic() + within_s
    first, client_nonce = opening(secret, label, hello)
    sock.sendall(first)
    server_nonce = _receive_exactly(sock, NONCE_BYTES, deadline)
    ciphers = derive_ciphers(secret, label, client_nonce, server_nonce)
    if ciphers["to_client"].open(_read_frame(sock, deadline)) != b"ok":
        raise Refused("the server did not accept the hello")
    return SealedSocket(sock, ciphers["to_server"], ciphers["to_client"])


def accept_sealed(sock: socket.socket, secret: bytes, label: bytes, within_s: float) -> tuple[SealedSocket, bytes]:
    """The server's handshake on an accepted ``sock``: the sealed connection and the client's hello.

    Nothing is sent to a client whose hello does not open.

    Raises
    ------
    Refused
        If the client does not hold the secret.
    ConnectionError, TimeoutError
        If it closes or stalls within ``within_s``.
    """
    deadline = time.monotonic() + within_s
    client_nonce = _receive_exactly(sock, NONCE_BYTES, deadline)
    hello = hello_cipher(secret, label, client_nonce).open(_read_frame(sock, deadline))
    reply, ciphers = answer(secret, label, client_nonce)
    sock.sendall(reply)
    return SealedSocket(sock, ciphers["to_client"], ciphers["to_server"]), hello
