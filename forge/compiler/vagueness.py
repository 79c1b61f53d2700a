"""Vague wording: step descriptions and ``done_when`` texts that say nothing checkable.

The phrases are data, kept in the two tables below so they can grow without touching the
rules that use them. Each entry is a regular expression, written in lower case with single
spaces, that must match the *whole* text, ignoring case (the text is lower-cased), runs
of whitespace, and punctuation at either end: "Analyze the problem." is vague, "Analyze
the problem in the billing export" is not. Both tables compile into one pattern each, so
a check is a single regex match (this runs on every step of every compile).
"""

from __future__ import annotations

import re
import string

__all__ = ["VAGUE_DONE_WHEN_PATTERNS", "VAGUE_STEP_PATTERNS", "is_vague_done_when", "is_vague_step"]

VAGUE_STEP_PATTERNS: tuple[str, ...] = (
    r"analy[sz]e (the )?problems?",
    r"execute (the )?tasks?",
    r"summari[sz]e (the )?results?",
    r"do it",
    r"do (the|this) (task|work|job)",
    r"(solve|fix|handle) (it|(the )?problems?)",
    r"work on it",
    r"get (it|this) done",
    r"todo|tbd|tba|step|task|work|stuff|misc",
    "分析问题",
    "执行任务",
    "总结结果",
    "完成任务",
    "处理问题",
    "解决问题",
)

VAGUE_DONE_WHEN_PATTERNS: tuple[str, ...] = (
    r"ensure (good |high )?quality",
    r"make sure (it|this|that|everything) works",
    r"(it |everything )?(looks|is) (good|fine|ok|okay)",
    r"(it |everything )?works",
    r"(all )?(done|complete|completed|finished)",
    r"good enough|all good|high quality|as expected|success|successful",
    "确保质量很好",
    "确保质量",
    "质量很好",
    "完成",
    "已完成",
    "没问题",
)

# ASCII punctuation plus the CJK and typographic marks plans are written with.
_PUNCTUATION = string.punctuation + "。，、；：？！…—–·「」『』（）《》【】“”‘’"
_EDGE = f"[\\s{re.escape(_PUNCTUATION)}]*"


def _compile(patterns: tuple[str, ...], *, empty: bool) -> re.Pattern[str]:
    upper = [pattern for pattern in patterns if pattern != pattern.lower()]
    if upper:  # it would never match the lower-cased text
        raise ValueError(f"vague-wording patterns must be written in lower case: {upper}")
    alternatives = [pattern.replace(" ", r"\s+") for pattern in patterns]
    if empty:
        alternatives.append("")
    body = "|".join(f"(?:{alternative})" for alternative in alternatives)
    # Matched against the lower-cased text, case-sensitively: with re.IGNORECASE sre
    # tries every alternative through its first letter, where a plain letter lets it
    # skip each one that cannot start the text (the checks took a fifth of a compile).
    return re.compile(f"{_EDGE}(?:{body}){_EDGE}")


_VAGUE_STEP = _compile(VAGUE_STEP_PATTERNS, empty=True)
_VAGUE_DONE_WHEN = _compile(VAGUE_DONE_WHEN_PATTERNS, empty=False)


def is_vague_step(description: str) -> bool:
    """Whether a step description is empty (or only punctuation) or one of
    ``VAGUE_STEP_PATTERNS``."""
    return _VAGUE_STEP.fullmatch(description.lower()) is not None


def is_vague_done_when(description: str) -> bool:
    """Whether a ``done_when`` description is one of ``VAGUE_DONE_WHEN_PATTERNS``.

    An empty description is not vague: a ``done_when`` may speak through its checks alone.
    """
    return _VAGUE_DONE_WHEN.fullmatch(description.lower()) is not None
