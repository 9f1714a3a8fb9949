"""Node entry points shut down quietly on Ctrl-C, also when it arrives twice (terminal + ros2 launch)."""
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

pytest.importorskip('rclpy')
pytestmark = pytest.mark.ros


def test_double_sigint_exits_cleanly_without_a_traceback(tmp_path):
    env = {**os.environ, 'ROS_DOMAIN_ID': str(150 + os.getpid() % 50)}
    code = 'from uncertain_bo.ros.explorer import main; main()'
    proc = subprocess.Popen([sys.executable, '-c', code, '--ros-args', '-p', f'run_dir:={tmp_path}'],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 60
        while not any('exploring' in line for line in lines):    # the explorer's start-up line: it spins
            assert proc.poll() is None and time.monotonic() < deadline, ''.join(lines)
            time.sleep(0.1)
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    reader.join(timeout=5)
    err = ''.join(lines)
    assert proc.returncode == 0, err
    assert 'Traceback' not in err


def test_sections_meant_for_the_node_that_miss_it_are_warned_about(tmp_path):
    from uncertain_bo.ros.spin import _warn_unknown_sections, params_files_in

    class Logger:
        def __init__(self):
            self.lines = []

        def warning(self, text):
            self.lines.append(text)

    class FakeNode:
        def __init__(self, fqn):
            self.fqn, self.logger = fqn, Logger()

        def get_fully_qualified_name(self):
            return self.fqn

        def get_name(self):
            return self.fqn.rsplit('/', 1)[-1]

        def get_logger(self):
            return self.logger

    f = tmp_path / 'p.yaml'
    f.write_text('explorerr:\n  ros__parameters: {beta: 2.0}\nekf:\n  ros__parameters: {}\n'
                 'explorer:\n  ros__parameters: {beta: 3.0}\n')
    assert params_files_in(['explorer', '--ros-args', '-p', 'a:=1', '--params-file', str(f), '--', 'x']) == [str(f)]
    root, ns = FakeNode('/explorer'), FakeNode('/rover1/explorer')
    _warn_unknown_sections(root, [str(f)])
    _warn_unknown_sections(ns, [str(f)])
    assert len(root.logger.lines) == 1 and "'explorerr'" in root.logger.lines[0]          # not 'ekf'
    assert len(ns.logger.lines) == 2 and any("section 'explorer' does not apply" in x for x in ns.logger.lines)
    assert "'/**/explorer'" in ns.logger.lines[0]
