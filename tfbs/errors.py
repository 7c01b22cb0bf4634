"""Errors a user can fix, and the one base class the job runner catches.

Every stage reports these in one line (file, line or key, and the reason)
and exits with status 2; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import re


class TfbsError(Exception):
    """A problem with the configuration or the inputs, not with the code."""


class ConfigError(TfbsError, ValueError):
    """A configuration that cannot be used; the message names file and key."""


class MissingInputError(TfbsError, FileNotFoundError):
    """An input file the configuration points at does not exist."""


class BelowFloorError(TfbsError):
    """A stage ran, but its result is below a floor the configuration sets."""


class BadInputError(TfbsError, ValueError):
    """A malformed input; the message names file, line and reason."""

    def __init__(self, uri: str, line: int, reason: str) -> None:
        super().__init__(f"{uri}:{line}: {reason}")
        self.uri = uri
        self.line = line
        self.reason = reason

    @classmethod
    def from_message(cls, message: str) -> "BadInputError":
        """Rebuild the error from its text (it crosses Spark as a string).

        Examples
        --------
        >>> BadInputError.from_message("labels.tsv:7: unknown label 'X'").line
        7
        """
        found = re.match(r"^(.*):(\d+): (.*)$", message)
        if not found:
            return cls("(unknown file)", 0, message)
        return cls(found.group(1), int(found.group(2)), found.group(3))


def bad_input_in(err: BaseException) -> BadInputError | None:
    """The :class:`BadInputError` that failed a Spark job, rebuilt on the driver.

    A task's exception reaches the driver as a Py4J error whose text holds
    the task's traceback; its ``BadInputError: <file>:<line>: <reason>`` line
    is the user's error. The traceback itself stays in Spark's log.

    Returns
    -------
    BadInputError or None
        ``err`` itself if it is one, the error rebuilt from its text, or
        None when no bad input caused the failure.

    Examples
    --------
    >>> bad_input_in(RuntimeError("Traceback ...\\ntfbs.errors.BadInputError: r.bed:3: bad\\n  at ...")).line
    3
    """
    if isinstance(err, BadInputError):
        return err
    found = re.search(r"BadInputError: (.+)", str(err))
    return BadInputError.from_message(found.group(1).strip()) if found else None
