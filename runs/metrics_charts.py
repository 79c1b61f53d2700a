"""Server-rendered SVG charts for the metrics page: geometry only, the template draws it.

Two charts, both one column per UTC day: run outcomes as stacked bars, and step latency
percentiles as lines. Each mark carries its numbers as a ``<title>`` (a tooltip, and
what a screen reader reads); each chart has a title and a description, and the page
shows the same numbers as text beside it. Colours come from CSS classes, never style
attributes (the pages' CSP allows no inline style).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from runs.metrics import OUTCOMES, Day

WIDTH, HEIGHT = 760, 240
LEFT, RIGHT, TOP, BOTTOM = 52, 12, 12, 28
OUTCOME_LABELS = {
    "succeeded": "Succeeded",
    "failed": "Failed",
    "budget_exhausted": "Budget exhausted",
    "cancelled": "Cancelled",
}


@dataclass(frozen=True)
class Mark:
    """A rectangle or a point, with its CSS class and its tooltip."""

    x: float
    y: float
    width: float
    height: float
    kind: str
    title: str


@dataclass(frozen=True)
class Tick:
    position: float
    label: str


@dataclass(frozen=True)
class Line:
    kind: str
    label: str
    points: str  # the polyline's "x,y x,y ..." (empty for fewer than two points)
    dots: tuple[Mark, ...]


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    plot_left: int
    plot_right: int
    plot_top: int
    plot_bottom: int
    y_ticks: tuple[Tick, ...]
    x_ticks: tuple[Tick, ...]
    bars: tuple[Mark, ...] = ()
    lines: tuple[Line, ...] = ()
    empty: bool = False

    @property
    def middle_x(self) -> float:
        return (self.plot_left + self.plot_right) / 2

    @property
    def middle_y(self) -> float:
        return (self.plot_top + self.plot_bottom) / 2


def nice_ticks(maximum: float, count: int = 4, *, whole: bool = False) -> list[float]:
    """0 and round steps (1, 2 or 5 times a power of ten) up to at least ``maximum``;
    ``whole``: steps of at least 1 (for counts)."""
    if maximum <= 0:
        return [0.0, 1.0]
    raw = maximum / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    if whole:
        step = max(step, 1)
    top = math.ceil(maximum / step) * step
    return [i * step for i in range(round(top / step) + 1)]


def outcome_bars(days: Sequence[Day]) -> Chart:
    """Stacked bars of run outcomes per day (succeeded at the bottom)."""
    peak = max((day.finished for day in days), default=0)
    ticks = nice_ticks(peak, whole=True)
    scale = _scale(ticks[-1])
    slot = _slot(days)
    bar_width = max(1.0, slot * 0.72)
    bars = []
    for index, day in enumerate(days):
        x = LEFT + index * slot + (slot - bar_width) / 2
        base = float(HEIGHT - BOTTOM)
        for outcome in OUTCOMES:
            count = day.outcomes[outcome]
            if not count:
                continue
            height = count * scale
            base -= height
            title = f"{day.day:%a %d %b}: {count:,} {OUTCOME_LABELS[outcome].lower()}"
            bars.append(Mark(_r(x), _r(base), _r(bar_width), _r(height), outcome, title))
    return Chart(
        WIDTH,
        HEIGHT,
        LEFT,
        WIDTH - RIGHT,
        TOP,
        HEIGHT - BOTTOM,
        y_ticks=tuple(Tick(_r(HEIGHT - BOTTOM - t * scale), f"{t:,.0f}") for t in ticks),
        x_ticks=_day_ticks(days, slot),
        bars=tuple(bars),
        empty=peak == 0,
    )


def latency_lines(days: Sequence[Day]) -> Chart:
    """Lines of the daily p50 and p95 step latency; a day without steps has no point."""
    values = [v for day in days for v in (day.latency_p50, day.latency_p95) if v is not None]
    ticks = nice_ticks(max(values, default=0.0))
    scale = _scale(ticks[-1])
    slot = _slot(days)
    lines = []
    for kind, label in (("p95", "p95"), ("p50", "p50")):
        points, dots = [], []
        for index, day in enumerate(days):
            value = day.latency_p50 if kind == "p50" else day.latency_p95
            if value is None:
                continue
            x = LEFT + index * slot + slot / 2
            y = HEIGHT - BOTTOM - value * scale
            points.append(f"{_r(x)},{_r(y)}")
            title = f"{day.day:%a %d %b}: {label} {format_ms(value)} over {day.steps:,} steps"
            dots.append(Mark(_r(x), _r(y), 0, 0, kind, title))
        lines.append(Line(kind, label, " ".join(points) if len(points) > 1 else "", tuple(dots)))
    return Chart(
        WIDTH,
        HEIGHT,
        LEFT,
        WIDTH - RIGHT,
        TOP,
        HEIGHT - BOTTOM,
        y_ticks=tuple(Tick(_r(HEIGHT - BOTTOM - t * scale), format_ms(t)) for t in ticks),
        x_ticks=_day_ticks(days, slot),
        lines=tuple(lines),
        empty=not values,
    )


def format_ms(value: float) -> str:
    if value < 1000:
        return f"{value:.0f} ms"
    if value < 60_000:
        return f"{value / 1000:.1f} s"
    return f"{value / 60_000:.1f} min"


def _scale(top: float) -> float:
    return (HEIGHT - TOP - BOTTOM) / top if top else 0.0


def _slot(days: Sequence[Day]) -> float:
    return (WIDTH - LEFT - RIGHT) / max(len(days), 1)


def _day_ticks(days: Sequence[Day], slot: float) -> tuple[Tick, ...]:
    """A date label every few days, so that labels never overlap (about 8 at most)."""
    every = max(1, math.ceil(len(days) / 8))
    return tuple(
        Tick(_r(LEFT + index * slot + slot / 2), f"{day.day:%d %b}")
        for index, day in enumerate(days)
        if index % every == 0
    )


def _r(value: float) -> float:
    return round(value, 1)
