"""A version's layout: where its author placed the steps on the graph.

Presentation only. It is stored beside the document (``PlanVersion.layout``), never in
it, so it is no part of the content hash, of an approval or of anything that runs: moving
a step changes no hash, and two versions with the same document and different layouts
compile, approve and run alike. ``{"positions": {step_id: [x, y]}}`` (graph coordinates,
the editor's model positions), or ``{}`` for the automatic layout.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

__all__ = ["LIMIT", "layout_for"]

# Positions beyond this (in either axis) are no drawing anyone made by hand.
LIMIT = 1e7


def layout_for(
    positions: Mapping[str, Sequence[float]] | None, step_ids: Iterable[str]
) -> dict[str, dict[str, list[float]]]:
    """The layout to store: the positions of the document's own steps (others dropped:
    a step deleted since it was placed), rounded to a tenth of a pixel; ``{}`` when none
    remain. Raises ``ValueError`` for a position that is not two finite numbers within
    ``LIMIT``."""
    if not positions:
        return {}
    wanted = set(step_ids)
    kept: dict[str, list[float]] = {}
    for step_id, point in positions.items():
        if len(point) != 2 or not all(_coordinate(value) for value in point):
            raise ValueError(f"the position of step {step_id!r} is not two finite numbers")
        if step_id in wanted:
            kept[step_id] = [round(float(value), 1) for value in point]
    return {"positions": kept} if kept else {}


def _coordinate(value: object) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and abs(value) <= LIMIT
    )
