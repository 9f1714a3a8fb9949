"""A marker scene with every part set (targets, measurements, recommendation, goal, rover), for the tests that
check the RViz configs list every marker namespace the explorers publish."""
import numpy as np


def full_marker_scene():
    from uncertain_bo.ros.operator_view import MarkerScene
    scene = MarkerScene([0.0, 10.0, 0.0, 10.0])
    scene.targets = np.array([[1.0, 1.0]])
    scene.means, scene.covariances, scene.readings = np.array([[1.2, 1.0]]), np.eye(2)[None] * 0.1, np.array([3.0])
    scene.recommendation = (1.0, 1.0, 3.0, 0.5)
    scene.goal, scene.rover = np.array([5.0, 5.0]), np.array([2.0, 2.0])
    return scene
