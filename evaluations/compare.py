"""Two reports side by side: per metric for the whole suite, then per case and metric,
each pair marked with which side did better. Pure: the compare page renders this."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from forge.evaluation import METRICS, CaseResult, Score, SuiteReport

__all__ = ["Comparison", "Pair", "compare", "duration"]

LABELS = {
    "validity": "Plan validity",
    "fidelity": "Execution fidelity",
    "replan": "Replan quality",
    "success": "End-to-end success",
    "cost": "Within budget",
    "tokens": "Tokens",
    "spent": "Cost",
    "seconds": "Wall-clock time",
}


@dataclass(frozen=True)
class Pair:
    """One measure for A and for B, as text, with ``better``: "a", "b" or "" (a tie, or
    not comparable), and each side's ``passed`` (None: does not apply or is absent)."""

    key: str
    label: str
    a: str
    b: str
    better: str = ""
    a_passed: bool | None = None
    b_passed: bool | None = None
    a_detail: str = ""
    b_detail: str = ""


@dataclass(frozen=True)
class CaseRow:
    id: str
    scenario: str
    pairs: tuple[Pair, ...]


@dataclass(frozen=True)
class Comparison:
    totals: tuple[Pair, ...]
    cases: tuple[CaseRow, ...]
    a_wins: int
    b_wins: int


def _better(a: float | None, b: float | None, *, lower: bool = False) -> str:
    if a is None or b is None or a == b:
        return ""
    return ("a" if a < b else "b") if lower else ("a" if a > b else "b")


def _score_text(score: Score | None) -> str:
    if score is None:
        return "—"
    if score.passed is None:
        return "n/a"
    mark = "pass" if score.passed else "fail"
    return f"{mark} {score.value:.2f}" if score.value is not None else mark


def _score_pair(metric: str, a: Score | None, b: Score | None) -> Pair:
    value_a = a.value if a is not None and a.passed is not None else None
    value_b = b.value if b is not None and b.passed is not None else None
    return Pair(
        metric,
        LABELS[metric],
        _score_text(a),
        _score_text(b),
        _better(value_a, value_b),
        a.passed if a is not None else None,
        b.passed if b is not None else None,
        _detail(a),
        _detail(b),
    )


def _detail(score: Score | None) -> str:
    if score is None:
        return ""
    return "; ".join([score.detail, *score.problems])


def _numbers(a: CaseResult | None, b: CaseResult | None) -> list[Pair]:
    def get(result: CaseResult | None, field: str) -> float | None:
        if result is None:
            return None
        return {"tokens": result.tokens, "spent": result.cost,
                "seconds": result.latency_ms / 1000}[field]  # fmt: skip

    pairs = []
    for field, say in (("tokens", "{:.0f}".format), ("spent", "{:g}".format),
                       ("seconds", duration)):  # fmt: skip
        x, y = get(a, field), get(b, field)
        shown = ["—" if v is None else say(v) for v in (x, y)]
        pairs.append(Pair(field, LABELS[field], *shown, _better(x, y, lower=True)))
    return pairs


def duration(seconds: float) -> str:
    """A wall-clock time as the report page writes it: whole milliseconds under a second,
    else seconds to two places."""
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def compare(a: SuiteReport, b: SuiteReport) -> Comparison:
    """A against B, cases matched by id (in A's order, then B's own)."""
    by_id_a = {case.id: case for case in a.cases}
    by_id_b = {case.id: case for case in b.cases}
    ids: Sequence[str] = [*by_id_a, *(i for i in by_id_b if i not in by_id_a)]
    rows = []
    for case_id in ids:
        x, y = by_id_a.get(case_id), by_id_b.get(case_id)
        pairs = [
            _score_pair(m, x.score(m) if x else None, y.score(m) if y else None) for m in METRICS
        ]
        pairs += _numbers(x, y)
        scenario = (x or y).scenario if (x or y) else ""
        rows.append(CaseRow(case_id, scenario, _as_shown(pairs)))
    totals = _as_shown(_totals(a, b))
    wins_a = sum(p.better == "a" for row in rows for p in row.pairs)
    wins_b = sum(p.better == "b" for row in rows for p in row.pairs)
    return Comparison(totals, tuple(rows), wins_a, wins_b)


def _as_shown(pairs: Iterable[Pair]) -> tuple[Pair, ...]:
    """A pair whose two sides read the same is a tie, whatever the digits past those shown:
    4.2 ms against 3.8 ms reads 4 ms against 4 ms, and is nobody's win."""
    return tuple(replace(pair, better="") if pair.a == pair.b else pair for pair in pairs)


def _totals(a: SuiteReport, b: SuiteReport) -> list[Pair]:
    sa, sb = a.summary(), b.summary()
    pairs = []
    for metric in METRICS:
        x, y = sa["metrics"][metric], sb["metrics"][metric]
        rate_x = x["passed"] / x["applicable"] if x["applicable"] else None
        rate_y = y["passed"] / y["applicable"] if y["applicable"] else None
        pairs.append(
            Pair(metric, LABELS[metric], f"{x['passed']}/{x['applicable']}",
                 f"{y['passed']}/{y['applicable']}", _better(rate_x, rate_y))
        )  # fmt: skip
    pairs.append(
        Pair("success_rate", "Success rate", f"{sa['success_rate']:.0%}",
             f"{sb['success_rate']:.0%}", _better(sa["success_rate"], sb["success_rate"]))
    )  # fmt: skip
    for key, label, say in (("tokens", "Tokens", "{:.0f}".format), ("cost", "Cost", "{:g}".format),
                            ("seconds", LABELS["seconds"], duration),
                            ("replans", "Replans", "{:.0f}".format)):  # fmt: skip
        pairs.append(
            Pair(key, label, say(sa[key]), say(sb[key]),
                 _better(sa[key], sb[key], lower=True) if key != "replans" else "")
        )  # fmt: skip
    per_a, per_b = sa["cost_per_success"], sb["cost_per_success"]
    pairs.append(
        Pair("cost_per_success", "Cost per success",
             "—" if per_a is None else f"{per_a:g}", "—" if per_b is None else f"{per_b:g}",
             _better(per_a, per_b, lower=True))
    )  # fmt: skip
    return pairs
