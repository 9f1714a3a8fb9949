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


class BackgroundSpin:
    """Spin ``executor`` with ``nodes`` on a daemon thread until :meth:`close`, which stops the thread first, then
    shuts the executor down (waiting for callbacks still running in its pool) and only then destroys the nodes.

    Why this order: ``executor.spin()`` on a thread while another thread destroys a node, or shuts the executor
    down, races rclpy's handles: the spinning thread raises ``InvalidHandle`` ("destruction was requested") and
    ends, and whatever it was spinning is silently never spun again."""

    def __init__(self, executor, nodes):
        import threading

        self.executor, self.nodes = executor, list(nodes)
        for n in self.nodes:
            executor.add_node(n)
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._spin, daemon=True)
        self.thread.start()

    def _spin(self):
        while not self._stop.is_set():
            self.executor.spin_once(timeout_sec=0.05)

    def close(self, timeout=10.0):
        self._stop.set()
        self.thread.join(timeout=timeout)
        self.executor.shutdown(timeout_sec=timeout)
        for n in self.nodes:
            self.executor.remove_node(n)
            n.destroy_node()
