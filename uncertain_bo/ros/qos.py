"""The QoS profiles the package's nodes share (one definition each).

- :data:`RELIABLE_10`: reliable, keep last 10 — commands, goals, plans, readings the nodes publish.
- :data:`LATCHED`: reliable, transient local, keep last 1 — maps and markers: a late joiner (RViz started later)
  gets the last message.
"""
from __future__ import annotations

from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

__all__ = ['RELIABLE_10', 'LATCHED']

RELIABLE_10 = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
