"""The test double of :class:`uncertain_bo.explorer.ExplorerOutputs`: records what the explorer asks for.

Test modules import it as ``from recording_host import RecordingHost`` (pytest puts ``test/`` on the path).
"""
import numpy as np


class RecordingHost:
    """Goals, stops and measurements in order; ``done`` is the final recommendation (None until finished)."""

    def __init__(self):
        self.goals, self.stops, self.measurements, self.done = [], [], [], None

    def send_goal(self, target):
        self.goals.append(np.array(target))

    def stop(self, position):
        self.stops.append(np.array(position))

    def measured(self, m, rec):
        self.measurements.append(m)

    def finished(self, rec):
        self.done = rec


class DrivingHost(RecordingHost):
    """Also knows whether the rover may drive: a goal sent and not stopped since (``active``)."""

    active = False

    def send_goal(self, target):
        super().send_goal(target)
        self.active = True

    def stop(self, position):
        super().stop(position)
        self.active = False
