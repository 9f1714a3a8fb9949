"""uncertain_bo: Bayesian optimisation under uncertain inputs.

A Gaussian process over location distributions (uGP-UCB, AIRBO, NES, DRBQO) and a ROS 2 explorer that
pairs localisation-filter location distributions with sensor readings. The library below ``ros/`` never
imports rclpy.
"""
__version__ = '0.1.0'
