"""The compiler's check of data between steps (``forge.plan.references``).

For each step whose arguments hold operators, once every step's tool is known: the
syntax, then each reference (``invalid_reference``: a step that does not exist, the step
itself, a step that is not an ancestor, so its output would not exist yet when this one
runs, or a path the referenced tool's declared output lacks), then the arguments against
the tool's JSON Schema with each value from an earlier step stood in for by a value of
the type its output declares there (``invalid_args`` when that type cannot stand there;
other rules, such as a minimum length, are left to run time, when the value is known).
The values themselves are resolved and validated at run time (``forge.runtime.calls``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from forge.compiler.diagnostics import Diagnostic
from forge.compiler.structure import Structure
from forge.plan import Step
from forge.plan.references import (
    FROM,
    JOIN,
    LITERAL,
    Location,
    Reference,
    ReferenceValueError,
    Template,
    location_text,
    substitute,
)
from forge.tools import ToolRegistry, ToolSpec
from forge.tools.outputs import OutputShape, shape_at, shape_in_value

__all__ = ["ReferenceChecker"]

# A stand-in of each JSON type for the schema check; a number that is not an integer, so
# that an integer argument does not accept a number output.
_PLACEHOLDERS: dict[str, Any] = {
    "string": "",
    "integer": 0,
    "number": 0.5,
    "boolean": False,
    "object": {},
    "array": [],
    "null": None,
}
_MAX_SCHEMA_ERRORS = 3


class _Unknown:
    """An operator inside an ``echo`` step's arguments: its value is known at run time."""


class ReferenceChecker:
    """Checks steps one by one against the whole plan's structure; build one per
    compile (it caches a schema validator per tool)."""

    def __init__(self, registry: ToolRegistry, structure: Structure) -> None:
        self._registry = registry
        self._structure = structure
        self._validators: dict[str, Any] = {}

    def check(self, step: Step, spec: ToolSpec, template: Template, out: list[Diagnostic]) -> None:
        """Append the diagnostics of ``step``'s operators (``template``, its arguments
        scanned) to ``out``; ``spec`` is the step's tool."""
        for problem in template.problems:
            out.append(
                Diagnostic.of(
                    "invalid_reference", f"step {step.id!r}: {problem.message}", (step.id,)
                )
            )
        ancestors = self._structure.lineage(step.id) - {step.id} if template.references else set()
        types: dict[Reference, str | None] = {}
        for reference in template.references:
            wrong = self._problem(step, reference, ancestors)
            if wrong is not None:
                out.append(wrong)
            else:
                types[reference] = self._shape(reference).json_type
        if len(types) == len(template.references) and not template.problems:
            self._check_schema(step, spec, types, out)

    def _problem(self, step: Step, reference: Reference, ancestors: set[str]) -> Diagnostic | None:
        where = f"step {step.id!r}: argument {_where(reference)}"
        source = reference.step
        if source == step.id:
            message = f"{where} refers to the step's own output, which does not exist yet"
            return Diagnostic.of("invalid_reference", message, (step.id,))
        if source not in self._structure.steps:
            message = f"{where} refers to {source!r}, which is not a step of this plan"
            return Diagnostic.of("invalid_reference", message, (step.id,))
        if source not in ancestors:
            message = (
                f"{where} refers to {source!r}, which step {step.id!r} does not depend on, "
                f"so its output may not exist when {step.id!r} runs: add {source!r} to its "
                "depends_on (or to an ancestor's)"
            )
            return Diagnostic.of(
                "invalid_reference", message, (step.id, source), ((source, step.id),)
            )
        shape = self._shape(reference)
        if shape.problem:
            tool = self._structure.steps[source].tool
            message = (
                f"{where} refers to {reference.source_text}, but the output {tool!r} "
                f"declares has no such value: {shape.problem}"
            )
            return Diagnostic.of(
                "invalid_reference", message, (step.id, source), ((source, step.id),)
            )
        return None

    def _shape(self, reference: Reference) -> OutputShape:
        """What the referenced step's tool declares at the reference's path."""
        source = self._structure.steps[reference.step]
        if source.tool is None or source.tool not in self._registry:
            return OutputShape()  # an agent step answers what it likes; unknown tools are
            # reported as such already
        spec = self._registry.get(source.tool)
        if spec.echoes_args:
            return shape_in_value(_skeleton(source.args), reference.path, _Unknown)
        return shape_at(spec.output_schema, reference.path)

    def _check_schema(
        self,
        step: Step,
        spec: ToolSpec,
        types: Mapping[Reference, str | None],
        out: list[Diagnostic],
    ) -> None:
        def stand_in(reference: Reference) -> Any:
            kind = types[reference]
            if kind is None:  # not declared: text where a $join needs it, else null
                return "" if reference.part is not None else None
            return _PLACEHOLDERS[kind]

        try:
            args = substitute(step.args, stand_in)
        except ReferenceValueError as exc:  # an object or a list declared in a $join
            out.append(Diagnostic.of("invalid_args", f"step {step.id!r}: {exc}", (step.id,)))
            return
        # Where a value from an earlier step stands, and its type when declared: a $join
        # is always text.
        filled: dict[Location, tuple[str | None, str]] = {}
        for reference in types:
            if reference.part is not None:
                filled[reference.at] = ("string", f"the {JOIN} of {_sources(types, reference.at)}")
            else:
                filled[reference.at] = (types[reference], reference.source_text)
        messages = []
        for error in self._validator(spec).iter_errors(args):
            path = tuple(error.absolute_path)
            hit = next((at for at in filled if path[: len(at)] == at), None)
            if hit is None:
                place = location_text(path) if path else "the arguments"
                messages.append(f"{place}: {error.message}")
            elif error.validator == "type" and path == hit and filled[hit][0] is not None:
                kind, source = filled[hit]
                messages.append(
                    f"{location_text(hit)} takes {_types(error.validator_value)} but "
                    f"{source} is {_article(kind or '')}"
                )
        if messages:
            shown = "; ".join(messages[:_MAX_SCHEMA_ERRORS])
            message = f"step {step.id!r}: arguments of {spec.name!r}: {shown}"
            out.append(Diagnostic.of("invalid_args", message, (step.id,)))

    def _validator(self, spec: ToolSpec) -> Any:
        validator = self._validators.get(spec.name)
        if validator is None:
            import jsonschema  # only plans that pass data between steps pay for its import

            schema = dict(spec.args_schema)
            cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)
            validator = self._validators[spec.name] = cls(schema)
        return validator


def _skeleton(value: Any) -> Any:
    """An ``echo`` step's arguments as its output will hold them: a ``$literal`` is its
    value, a ``$join`` text, a ``$from`` unknown."""
    if isinstance(value, Mapping):
        if FROM in value:
            return _Unknown()
        if JOIN in value:
            return ""
        if LITERAL in value:
            return value[LITERAL]
        return {key: _skeleton(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_skeleton(item) for item in value]
    return value


def _where(reference: Reference) -> str:
    place = location_text(reference.at)
    return place if reference.part is None else f"{place} (part {reference.part} of its {JOIN})"


def _sources(types: Mapping[Reference, str | None], at: Location) -> str:
    return ", ".join(reference.source_text for reference in types if reference.at == at)


def _types(value: Any) -> str:
    kinds = value if isinstance(value, list) else [value]
    return " or ".join(_article(str(kind)) for kind in kinds)


def _article(kind: str) -> str:
    return {"integer": "an integer", "array": "a list", "object": "an object"}.get(
        kind, f"a {kind}"
    )
