"""Vague wording: step descriptions and ``done_when`` texts that say nothing checkable.

The phrases are data, kept in the two tables below so they can grow without touching the
rules that use them. Each entry is a regular expression, written in lower case with single
spaces, that must match the *whole* text, ignoring case, runs of whitespace, and
punctuation at either end: "Analyze the problem." is vague, "Analyze the problem in the
billing export" is not. Both tables compile into one pattern each, so a check is a single
regex match (this runs on every step of every compile), and only for a text of at most
as many words as the longest phrase: most descriptions are longer, and counting their
words costs a fraction of the match.
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
# What ``\s`` matches, and ``str.split`` splits at: every character ``str.isspace``
# says is whitespace (a test holds it to that).
WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004"
    "\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
_EDGE_CHARACTERS = WHITESPACE + _PUNCTUATION


def _compile(patterns: tuple[str, ...], *, empty: bool) -> re.Pattern[str]:
    alternatives = [pattern.replace(" ", r"\s+") for pattern in patterns]
    if empty:
        alternatives.append("")
    body = "|".join(f"(?:{alternative})" for alternative in alternatives)
    return re.compile(f"{_EDGE}(?:{body}){_EDGE}", re.IGNORECASE)


def most_words(patterns: tuple[str, ...]) -> int:
    """The most words a text one of ``patterns`` matches can have, punctuation and
    whitespace at either end left out. Words are separated by whitespace, which only a
    pattern's spaces match, each at most once: no pattern may repeat (``*``, ``+``,
    ``{``), so each has at most one word more than it has spaces."""
    for pattern in patterns:
        if any(repeat in pattern for repeat in "*+{"):
            raise ValueError(f"vague pattern {pattern!r} repeats: its words cannot be counted")
    return max(pattern.count(" ") + 1 for pattern in patterns)


def _fewer_words_than(text: str, most: int) -> bool:
    """Whether ``text``, punctuation and whitespace at either end left out, has at most
    ``most`` words (stripping those ends never adds a word a match would have)."""
    return len(text.strip(_EDGE_CHARACTERS).split(None, most)) <= most


_VAGUE_STEP = _compile(VAGUE_STEP_PATTERNS, empty=True)
_VAGUE_DONE_WHEN = _compile(VAGUE_DONE_WHEN_PATTERNS, empty=False)
_STEP_WORDS = most_words(VAGUE_STEP_PATTERNS)
_DONE_WHEN_WORDS = most_words(VAGUE_DONE_WHEN_PATTERNS)


def is_vague_step(description: str) -> bool:
    """Whether a step description is empty (or only punctuation) or one of
    ``VAGUE_STEP_PATTERNS``."""
    return (
        _fewer_words_than(description, _STEP_WORDS)
        and _VAGUE_STEP.fullmatch(description) is not None
    )


def is_vague_done_when(description: str) -> bool:
    """Whether a ``done_when`` description is one of ``VAGUE_DONE_WHEN_PATTERNS``.

    An empty description is not vague: a ``done_when`` may speak through its checks alone.
    """
    return (
        _fewer_words_than(description, _DONE_WHEN_WORDS)
        and _VAGUE_DONE_WHEN.fullmatch(description) is not None
    )
