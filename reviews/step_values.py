"""The values a run gave the arguments a step takes from earlier steps' outputs, for the
step details the review pages show beside the arguments as written
(``static/forge/js/model/step-details.js``).

Each argument that holds a reference is resolved on its own by the one resolver
(``forge.runtime.calls.resolve_args``), so one that cannot be resolved yet (its step has
not succeeded, its path is missing) says why without hiding the others. A value is shown
as a preview shows it: secrets redacted (``forge.redaction``), as JSON, and cut after
``VALUE_LIMIT`` characters (the run page's drawer has the outputs whole). Who may read
these pages may read plan arguments (``plan.view``, ``run.view``, the approver's
rights); an auditor reaches none of them (``accounts.roles``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from forge.plan.references import scan
from forge.redaction import redact
from forge.runtime.calls import UnresolvedCall, resolve_args
from runs.models import StepRun

__all__ = ["VALUE_LIMIT", "argument_values", "run_values", "shown"]

VALUE_LIMIT = 6_000


def argument_values(args: Mapping[str, Any], outputs: Mapping[str, Any]) -> dict[str, Any]:
    """For each argument of ``args`` that takes a value from an earlier step: ``{"text",
    "truncated"}``, its value from ``outputs`` (step id -> output), or ``{"problem"}``,
    why there is none."""
    values: dict[str, Any] = {}
    for name, value in args.items():
        template = scan({name: value})
        if not template.references:
            continue
        if template.problems:
            values[name] = {"problem": template.problems[0].message}
            continue
        try:
            resolved = resolve_args({name: value}, outputs)[name]
        except UnresolvedCall as exc:
            values[name] = {"problem": exc.message}
            continue
        values[name] = shown(redact(resolved))
    return values


def shown(value: Any) -> dict[str, Any]:
    """``value`` as the review pages show a value (an argument's, a kept output, a
    milestone's facts): pretty JSON cut after ``VALUE_LIMIT`` characters, ``{"text",
    "truncated"}``."""
    text = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)
    return {"text": text[:VALUE_LIMIT], "truncated": len(text) > VALUE_LIMIT}


def run_values(run_id: int, number: int, document: Mapping[str, Any]) -> dict[str, Any]:
    """``{step id: {"args": argument_values}}`` for the tool steps of ``document`` (version
    ``number`` of run ``run_id``) whose arguments take values from earlier steps, from the
    outputs of the steps that succeeded in that version of the run."""
    steps = [
        step
        for step in document.get("steps", [])
        if step.get("tool") and isinstance(step.get("args"), dict) and scan(step["args"]).references
    ]
    if not steps:
        return {}
    sources = {ref.step for step in steps for ref in scan(step["args"]).references}
    outputs = dict(
        StepRun.objects.filter(
            run_id=run_id, plan_version=number, step_id__in=sources, status="succeeded"
        ).values_list("step_id", "output")
    )
    return {step["id"]: {"args": argument_values(step["args"], outputs)} for step in steps}
