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
