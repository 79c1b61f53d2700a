"""The vague-wording checks match only texts of few words, so they count words first; the
count must never turn down a text the patterns match."""

from __future__ import annotations

import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forge.compiler import vagueness
from forge.compiler.vagueness import (
    VAGUE_DONE_WHEN_PATTERNS,
    VAGUE_STEP_PATTERNS,
    WHITESPACE,
    is_vague_done_when,
    is_vague_step,
    most_words,
)

EDGES = st.text(alphabet=WHITESPACE + vagueness._PUNCTUATION, max_size=6)
PHRASES = [
    "analyse the problems", "do the work", "fix the problem", "get this done", "TBD",
    "make sure everything works", "everything looks okay", "ensure high quality",
    "as expected", "确保质量很好", "完成任务", "Produce the report from the export",
]  # fmt: skip
WORDS = st.sampled_from(
    ["do", "it", "the", "work", "fix", "problem", "looks", "good", "item", "is", "完成", "x"]
)


def test_whitespace_is_every_character_python_calls_whitespace():
    everything = "".join(c for c in map(chr, range(sys.maxunicode + 1)) if c.isspace())
    assert everything == WHITESPACE


def test_a_pattern_that_repeats_cannot_have_its_words_counted():
    with pytest.raises(ValueError, match="repeats"):
        most_words(("do (it )+now",))
    assert most_words(VAGUE_STEP_PATTERNS) >= 3
    assert most_words(VAGUE_DONE_WHEN_PATTERNS) >= 4  # "make sure everything works"


@settings(max_examples=1000, deadline=None)
@given(
    EDGES,
    st.sampled_from(PHRASES) | st.lists(WORDS, max_size=7).map(" ".join),
    st.text(alphabet=WHITESPACE, min_size=1, max_size=3),
    EDGES,
)
def test_counting_words_first_never_changes_what_is_vague(before, phrase, space, after):
    text = before + phrase.replace(" ", space) + after
    assert is_vague_step(text) == (vagueness._VAGUE_STEP.fullmatch(text) is not None)
    assert is_vague_done_when(text) == (vagueness._VAGUE_DONE_WHEN.fullmatch(text) is not None)


@pytest.mark.parametrize("phrase", PHRASES[:-1])
def test_each_vague_phrase_is_vague_padded_with_punctuation_and_spaces(phrase):
    padded = f" \u3000...  {phrase.replace(' ', chr(0x2003) + ' ')} !!\n"
    assert is_vague_step(padded) or is_vague_done_when(padded)
