"""The explorer's stages (:class:`State`): the states of the measurement cycle
(:mod:`~uncertain_bo.explorer.state_machine`, whose docstring draws the transitions between them).
"""
import enum

__all__ = ['State']


class State(enum.Enum):
    """A stage of the measurement cycle; its value is the text the operator view shows.

    Example:
        >>> from uncertain_bo.explorer.states import State
        >>> State('measuring') is State.MEASURING, State.WAITING_FOR_POSE.value
        (True, 'waiting for pose')
    """

    WAITING_FOR_POSE = 'waiting for pose'
    DECIDING = 'deciding'
    DRIVING = 'driving'
    RELOCALISING = 'relocalising'
    DWELLING = 'dwelling'
    MEASURING = 'measuring'
    PAUSED = 'paused'
    DONE = 'done'
