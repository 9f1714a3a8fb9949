"""The explorer's stages (:class:`State`): the states of the measurement cycle
(:mod:`~uncertain_bo.explorer.state_machine`, whose docstring draws the transitions between them).
"""
import enum

__all__ = ['State']


class State(enum.Enum):
    WAITING_FOR_POSE = 'waiting for pose'
    DECIDING = 'deciding'
    DRIVING = 'driving'
    RELOCALISING = 'relocalising'
    DWELLING = 'dwelling'
    MEASURING = 'measuring'
    PAUSED = 'paused'
    DONE = 'done'
