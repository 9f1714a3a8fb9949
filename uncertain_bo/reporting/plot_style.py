"""How the run and benchmark plots keep their annotations off the data (matplotlib).

- Legends go outside the axes (:func:`legend_outside`): under a map, where a legend inside would cover part of the
  field (the hotspot is often in a corner), and right of a curve panel.
- Markers on a map are not clipped at the axes' edge (:data:`MAP_MARKER`): a target or the robust optimum on the
  boundary of the field stays whole instead of half a marker.
- Each rover of a team has its own colour and legend entry (:func:`rover_colours`), the same in every panel.
- A unit goes in square brackets after what is drawn (:func:`unit_label`): ``regret [m (elevation)]``.
"""
from __future__ import annotations

from typing import Any, Iterable, Sequence

import numpy as np

__all__ = ['MAP_MARKER', 'ROVER_COLOURS', 'legend_outside', 'rover_colours', 'scatter_targets', 'unit_label']

#: keyword arguments of a marker drawn on a map: drawn whole on the axes' edge, above the field image
MAP_MARKER: dict[str, Any] = {'clip_on': False, 'zorder': 4}

#: rover colours, in the order the rovers appear: strong colours that stay visible on the 'terrain' and 'viridis'
#: maps and apart from the blue of the location ellipses (the first is the one colour of a lone rover's targets)
ROVER_COLOURS = ('crimson', 'darkorange', 'black', 'magenta', 'saddlebrown', 'lime', 'deeppink', 'olive')


def rover_colours(names: Iterable[Any]) -> dict[Any, str]:
    """``{name: colour}`` for the distinct ``names`` in order of first appearance (:data:`ROVER_COLOURS`, cycled
    beyond eight rovers). A lone rover's name (None included) gets the first colour."""
    out: dict[Any, str] = {}
    for name in names:
        if name not in out:
            out[name] = ROVER_COLOURS[len(out) % len(ROVER_COLOURS)]
    return out


def legend_outside(ax, where: str = 'below', ncol: int = 3, fontsize: float = 7):
    """Draw ``ax``'s legend outside its axes: ``'below'`` (centred under the axes and their x label: maps) or
    ``'right'`` (beside the axes, top-aligned: curve panels). Returns the legend, or None when nothing is labelled.

    Raises:
        ValueError: ``where`` is neither.
    """
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return None
    if where == 'below':
        return ax.legend(handles, labels, loc='upper center', bbox_to_anchor=(0.5, -0.13), ncol=ncol,
                         fontsize=fontsize, frameon=False)
    if where == 'right':
        return ax.legend(handles, labels, loc='upper left', bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0,
                         fontsize=fontsize, frameon=False)
    raise ValueError(f"where must be 'below' or 'right', got {where!r}")


def scatter_targets(ax, targets: np.ndarray, rovers: Sequence[Any], size: float = 30, numbers: bool = False,
                    label: bool = True) -> dict[Any, str]:
    """Draw ``targets`` ``(k, 2)`` (m) on the map ``ax`` as crosses, one colour and legend entry per rover
    (``rovers``: each target's rover, None for a lone rover's: entry ``'targets'``), unclipped at the edge;
    ``numbers`` writes each target's 1-based index beside it. Returns ``{rover: colour}``."""
    colours = rover_colours(rovers)
    for name, colour in colours.items():
        idx = [i for i, r in enumerate(rovers) if r == name]
        text = ('targets' if name is None else f'{name}: targets') if label else None
        ax.scatter(targets[idx, 0], targets[idx, 1], marker='x', color=colour, s=size, label=text, **MAP_MARKER)
        for i in idx if numbers else ():
            ax.annotate(str(i + 1), targets[i], textcoords='offset points', xytext=(3, 3), fontsize=7, color=colour,
                        annotation_clip=False)
    return colours


def unit_label(what: str, unit: str | None) -> str:
    """``what`` with ``unit`` in square brackets (``'regret [m (elevation)]'``), or ``what`` alone without one."""
    return f'{what} [{unit}]' if unit else what
