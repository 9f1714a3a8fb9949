"""One view of a run's observations, shown by whoever holds them: :class:`ObservationView` reads the attribute of
the same name of its owner's ``observations`` (the read-only snapshot of a :class:`~uncertain_bo.acquisition.
DecisionContext`, the live log of a :class:`~uncertain_bo.planning.planner.Planner`), so ``targets``, ``y``,
``locations``, ... are defined once, by the observations object, and not restated by each holder.
"""
from __future__ import annotations

from typing import Any

__all__ = ['ObservationView']


class ObservationView:
    """A read-only attribute that is ``owner.observations.<its name>``.

    Args:
        doc: the attribute's docstring (shapes and units as the holder's users see them).

    Raises:
        AttributeError: on assignment (a view is read-only; change the observations instead).

    Example:
        >>> import torch
        >>> from types import SimpleNamespace
        >>> class Run:
        ...     y = ObservationView('``(n,)`` past readings (field units).')
        ...     def __init__(self, observations):
        ...         self.observations = observations
        >>> run = Run(SimpleNamespace(y=torch.tensor([412.3, 410.9])))
        >>> run.y
        tensor([412.3000, 410.9000])
        >>> Run.y.__doc__
        '``(n,)`` past readings (field units).'
    """

    def __init__(self, doc: str = ''):
        self.__doc__ = doc
        self.name = ''

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        return self if obj is None else getattr(obj.observations, self.name)

    def __set__(self, obj: Any, value: Any) -> None:
        raise AttributeError(f'{self.name} is a view of the observations (read-only)')
