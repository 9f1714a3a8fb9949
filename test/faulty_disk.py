"""A disk that fails on demand, for storage-fault tests: wraps ``os.open``/``os.write``/``os.fsync``/``os.ftruncate``
(what :mod:`uncertain_bo.journal.journal` writes with) for the files under one folder.

Test modules import it as ``from faulty_disk import FaultyDisk`` (pytest puts ``test/`` on the path).
"""
import errno
import os


class FaultyDisk:
    """Makes the journal's OS calls fail for files under ``root``: ``free`` bytes left (None = unlimited; a write
    past it writes what fits, the next one raises ENOSPC), and EIO/EROFS from fsync, ftruncate or open."""

    def __init__(self, monkeypatch, root):
        self.root = str(root)
        self.free: int | None = None
        self.fail_fsync = self.fail_truncate = False
        self.fail_open: int | None = None
        self.calls = {'write': 0, 'fsync': 0}
        real = {name: getattr(os, name) for name in ('open', 'write', 'fsync', 'ftruncate')}

        def ours(fd):
            try:
                return os.readlink(f'/proc/self/fd/{fd}').startswith(self.root)
            except OSError:
                return False

        def fake_open(path, flags, *args, **kwargs):
            if self.fail_open is not None and str(path).startswith(self.root) and flags & (os.O_WRONLY | os.O_RDWR):
                raise OSError(self.fail_open, os.strerror(self.fail_open), str(path))
            return real['open'](path, flags, *args, **kwargs)

        def fake_write(fd, data):
            if not ours(fd) or self.free is None:
                return real['write'](fd, data)
            self.calls['write'] += 1
            if self.free <= 0:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            n = real['write'](fd, bytes(data[:self.free]))
            self.free -= n
            return n

        def fake_fsync(fd):
            if ours(fd) and self.fail_fsync:
                self.calls['fsync'] += 1
                raise OSError(errno.EIO, os.strerror(errno.EIO))
            return real['fsync'](fd)

        def fake_ftruncate(fd, size):
            if ours(fd) and self.fail_truncate:
                raise OSError(errno.EIO, os.strerror(errno.EIO))
            return real['ftruncate'](fd, size)

        for name, fn in (('open', fake_open), ('write', fake_write), ('fsync', fake_fsync),
                         ('ftruncate', fake_ftruncate)):
            monkeypatch.setattr(os, name, fn)

    def heal(self):
        self.free, self.fail_fsync, self.fail_truncate, self.fail_open = None, False, False, None
