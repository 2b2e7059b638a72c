"""Reading a file taosync did not write, bounded: it must be a regular file, and not huge.

A FIFO named as a key file or standing where a client file should be would hang a
plain ``open()`` for ever (it waits for a writer); ``/dev/zero`` or a 3 GB file would
fill memory. :func:`read_regular` looks before it opens (``stat``: opening some devices
does something), opens non-blocking (a FIFO swapped in meanwhile cannot hang it),
checks again on the descriptor (``fstat``), and reads at most ``limit`` bytes. What it
refuses is an ``OSError`` whose ``strerror`` says what is there, so every caller's
"cannot be read (…)" message names it. Standard library only: the no-op fast path
reads its inputs through here too.
"""

from __future__ import annotations

import errno
import os
import stat

#: the largest client file taosync reads (a config file is kilobytes; a bigger one is
#: not a config file, and reading it would only fill memory)
CLIENT_FILE_MAX = 256 << 20
#: the largest ``${file:…}`` secret (the key, an MCP secret): a key is a line
SECRET_FILE_MAX = 64 << 10

_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


class NotRegularFile(OSError):
    """A FIFO, a device or a socket where a file was expected."""


class FileTooLarge(OSError):
    """Over the limit its reader sets; ``size`` is None when only reading found out."""

    def __init__(self, path, size: int | None, limit: int):
        said = f"{_amount(size)}, over" if size is not None else "more than"
        super().__init__(errno.EFBIG, f"{said} the {_amount(limit)} taosync reads", str(path))
        self.size, self.limit = size, limit


def kind_of(mode: int) -> str:
    """What a non-regular file is, in words."""
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _refuse(path, mode: int) -> None:
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, "Is a directory", str(path))
    if not stat.S_ISREG(mode):
        raise NotRegularFile(errno.EINVAL, f"{kind_of(mode)}, not a regular file", str(path))


def read_regular(path, limit: int = CLIENT_FILE_MAX) -> bytes:
    """The bytes of the regular file at ``path`` (symlinks followed), at most ``limit``;
    :class:`NotRegularFile`, :class:`IsADirectoryError` or :class:`FileTooLarge` else
    (never blocks, never reads more than ``limit + 1`` bytes)."""
    return read_regular_stat(path, limit)[1]


def read_regular_stat(path, limit: int = CLIENT_FILE_MAX) -> tuple[os.stat_result, bytes]:
    """:func:`read_regular`, with the ``fstat`` of the descriptor it read."""
    st = os.stat(path)
    _refuse(path, st.st_mode)
    if st.st_size > limit:
        raise FileTooLarge(path, st.st_size, limit)
    fd = os.open(path, _OPEN_FLAGS)
    try:
        st = os.fstat(fd)
        _refuse(path, st.st_mode)  # swapped between the stat and the open
        if st.st_size > limit:
            raise FileTooLarge(path, st.st_size, limit)
        parts, total = [], 0
        while chunk := os.read(fd, min(1 << 20, limit + 1 - total)):
            parts.append(chunk)
            total += len(chunk)
            if total > limit:  # it grew while being read
                raise FileTooLarge(path, None, limit)
        return st, b"".join(parts)
    finally:
        os.close(fd)


def _amount(size: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift:
            value = size / (1 << shift)
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{size} bytes"
