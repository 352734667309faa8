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


def open_regular(path: str | os.PathLike, what: str = "file"):
    """``path`` opened for binary reading, refused with an ``OSError``
    naming it unless it is a regular file: ``IsADirectoryError`` for a
    folder, ``errno.EINVAL`` for a FIFO, socket or device.  The open does
    not block (O_NONBLOCK, cleared once the file is known to be regular),
    so a FIFO with no writer is refused at once."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, f"{what} is a directory",
                                    os.fspath(path))
        if not stat.S_ISREG(mode):
            kind = ("a FIFO" if stat.S_ISFIFO(mode) else
                    "a socket" if stat.S_ISSOCK(mode) else "a device")
            raise OSError(errno.EINVAL, f"{what} is {kind}, not a regular file",
                          os.fspath(path))
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
