"""The ``forge.plan/v1`` plan document: typed values, codecs, formats, limits and diffs."""

from forge.plan.codec import canonical_json, content_hash, from_data, to_data
from forge.plan.diff import FieldChange, PlanDiff, StepChange, diff_plans
from forge.plan.document import SCHEMA, Budget, DoneWhen, Estimate, Milestone, PlanDocument, Step
from forge.plan.formats import (
    EXPORT_FORMATS,
    IMPORT_FORMATS,
    ImportedPlan,
    ImportWarning,
    detect_format,
    dump_plan,
    import_plan,
    load_plan,
)
from forge.plan.limits import DEFAULT_LIMITS, ImportLimits
from forge.plan.schema import PLAN_SCHEMA

__all__ = [
    "DEFAULT_LIMITS",
    "EXPORT_FORMATS",
    "IMPORT_FORMATS",
    "PLAN_SCHEMA",
    "SCHEMA",
    "Budget",
    "DoneWhen",
    "Estimate",
    "FieldChange",
    "ImportLimits",
    "ImportWarning",
    "ImportedPlan",
    "Milestone",
    "PlanDiff",
    "PlanDocument",
    "Step",
    "StepChange",
    "canonical_json",
    "content_hash",
    "detect_format",
    "diff_plans",
    "dump_plan",
    "from_data",
    "import_plan",
    "load_plan",
    "to_data",
]
