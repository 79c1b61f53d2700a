"""The ``forge.plan/v1`` plan document: typed values, codecs, formats, limits and diffs."""

from forge.plan.codec import canonical_json, content_hash, from_data, to_data
from forge.plan.document import SCHEMA, Budget, DoneWhen, Estimate, PlanDocument, Step
from forge.plan.limits import DEFAULT_LIMITS, ImportLimits

__all__ = [
    "DEFAULT_LIMITS",
    "SCHEMA",
    "Budget",
    "DoneWhen",
    "Estimate",
    "ImportLimits",
    "PlanDocument",
    "Step",
    "canonical_json",
    "content_hash",
    "from_data",
    "to_data",
]
