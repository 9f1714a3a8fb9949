"""Test helper shared by the node tests: spin an executor until a condition holds."""
import time


def spin_until(executor, cond, timeout=10.0, every=None):
    """Spin ``executor`` (10 ms at a time), calling ``every()`` before each check, until ``cond()`` is true
    or ``timeout`` seconds pass. Returns whether ``cond()`` became true."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        executor.spin_once(timeout_sec=0.01)
        if every:
            every()
        if cond():
            return True
    return False
