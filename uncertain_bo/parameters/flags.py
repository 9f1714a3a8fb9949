"""Command-line flags for node parameters, built from the parameters' specs.

A command that exposes a node parameter as a flag of its own (``uncertain-bo bench --beta``, ``--n-initial``, ...)
takes its type, allowed range or choices, default and help from the parameter's
:class:`~uncertain_bo.parameters.specs.Param`, so that a value the node would refuse is refused on the command line
with the same rule (one validation, :meth:`Param.check`) and the help states the same allowed set.
"""
from __future__ import annotations

import argparse
from typing import Any, Callable

from .specs import Param, ParameterError

__all__ = ['flag_value', 'flag_type', 'list_flag_type', 'flag_help']

_BOOL = {'true': True, 'false': False}


def flag_value(spec: Param, text: str) -> Any:
    """``text`` of a command-line flag as the value of ``spec``, checked by :meth:`Param.check`.

    Raises:
        ParameterError: ``text`` is not a value of the spec's type, or the value is not allowed.
    """
    kind, raw = spec.kind, text.strip()
    if kind not in ('bool', 'int', 'float', 'str'):
        raise ParameterError(f'parameter {spec.name!r}: list parameters have no flag of their own')
    try:
        if kind == 'bool':
            value: Any = _BOOL[raw.lower()]
        elif kind == 'int':
            value = int(raw)
        elif kind == 'float':
            value = float(raw)
        else:
            value = text
    except (KeyError, ValueError):
        raise ParameterError(f'{text!r} is not {spec.allowed()}') from None
    try:
        return spec.check(value)
    except ParameterError:
        raise ParameterError(f'{text!r} is not {spec.allowed()}') from None


def flag_type(spec: Param) -> Callable[[str], Any]:
    """argparse ``type=`` for a flag that sets ``spec``: the checked value, or argparse's one-line error
    (``argument --n-initial: '0' is not a int in [1, 1000]``)."""
    def parse(text: str) -> Any:
        try:
            return flag_value(spec, text)
        except ParameterError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    parse.__name__ = spec.kind   # argparse names the type in some messages
    return parse


def list_flag_type(spec: Param, words: tuple[str, ...] = ()) -> Callable[[str], str]:
    """argparse ``type=`` for a comma-separated list of values of ``spec`` (a sweep), each checked as
    :func:`flag_type` does; ``words`` are extra values allowed as they are (``'theory'`` for ``--beta``).
    Returns the text unchanged once every element is valid (the command splits it)."""
    def parse(text: str) -> str:
        items = [t.strip() for t in text.split(',') if t.strip()]
        if not items:
            raise argparse.ArgumentTypeError(f'{text!r} names no value')
        for item in items:
            if item in words:
                continue
            try:
                flag_value(spec, item)
            except ParameterError as exc:
                also = f" or {', '.join(repr(w) for w in words)}" if words else ''
                raise argparse.ArgumentTypeError(f'{exc}{also}') from None
        return text
    parse.__name__ = f'{spec.kind} list'
    return parse


def flag_help(spec: Param, what: str, default: str | None = None) -> str:
    """Help of a flag that sets ``spec``: ``what`` it does, the parameter it corresponds to, its allowed set and
    its default (``default`` overrides the spec's, e.g. ``"the problem's"`` for a deliberately different one)."""
    shown = default if default is not None else (repr(spec.default) if isinstance(spec.default, str)
                                                 else str(spec.default))
    return f"{what} (the explorer's {spec.name}: {spec.allowed()}; default {shown})"
