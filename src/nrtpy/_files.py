"""Reading the files users name: regular files only, never blocking.

A FIFO, a terminal or a device given where a file is expected would block
the reader until something writes (or read forever from /dev/zero); the
NEFF reader refuses them in C (src/ext/neff_file.c), and every Python
reader of a user's path goes through here to refuse them the same way.
"""

from __future__ import annotations

import errno
import os
import stat

# Far above any HLO module or array file a test or model gives; a bound on
# what a mistaken path can make us allocate.
MAX_BYTES = 1 << 34


# What a path is when it is not a regular file, for messages.
_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def _not_regular(path: str | os.PathLike, mode: int, what: str) -> OSError:
    """The OSError that refuses ``path`` (of ``mode``), naming what it is:
    IsADirectoryError for a folder, errno.EINVAL otherwise; ``kind`` holds
    the words ("a FIFO") for callers that say it their own way."""
    kind = next((name for test, name in _KINDS if test(mode)), "a special file")
    if stat.S_ISDIR(mode):
        exc: OSError = IsADirectoryError(errno.EISDIR, f"{what} is a directory",
                                         os.fspath(path))
    else:
        exc = OSError(errno.EINVAL, f"{what} is {kind}, not a regular file",
                      os.fspath(path))
    exc.kind = kind  # type: ignore[attr-defined]
    return exc


def open_regular(path: str | os.PathLike, what: str = "file"):
    """``path`` opened for binary reading, refused with an ``OSError``
    naming it unless it is a regular file (see _not_regular; its ``kind``
    says what the path is).  The open does not block (O_NONBLOCK, cleared
    once the descriptor is known to be a regular file), so a FIFO with no
    writer is refused at once; the check is of the descriptor opened, not
    of whatever the path names a moment before."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        # (a socket cannot be opened at all: say what it is)
        try:
            mode = os.stat(path).st_mode
        except OSError:
            mode = stat.S_IFREG
        if not stat.S_ISREG(mode):
            raise _not_regular(path, mode, what) from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise _not_regular(path, mode, what)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | os.PathLike, what: str = "file") -> bytes:
    """The whole regular file at ``path`` (see :func:`open_regular`), at
    most ``MAX_BYTES`` long (``errno.EFBIG`` beyond)."""
    with open_regular(path, what) as f:
        size = os.fstat(f.fileno()).st_size
        if size > MAX_BYTES:
            raise OSError(errno.EFBIG, f"{what} is {size} bytes, more than "
                          f"{MAX_BYTES}", os.fspath(path))
        return f.read()
