"""The GraphCompiler: plan documents in, an ``ExecutableGraph`` or diagnostics out."""

from forge.compiler.bindings import CallRefused, bind_call
from forge.compiler.compiler import CompileResult, GraphCompiler
from forge.compiler.diagnostics import CODES, SEVERITIES, Diagnostic, Severity
from forge.compiler.graph import ExecutableGraph, ExecutableNode, PerformedSideEffect, ToolBinding
from forge.compiler.impact import Impact, compare_impact, impact_of
from forge.compiler.structure import MAX_CYCLES_PER_COMPONENT

__all__ = [
    "CODES",
    "MAX_CYCLES_PER_COMPONENT",
    "SEVERITIES",
    "CallRefused",
    "CompileResult",
    "Diagnostic",
    "ExecutableGraph",
    "ExecutableNode",
    "GraphCompiler",
    "Impact",
    "PerformedSideEffect",
    "Severity",
    "ToolBinding",
    "bind_call",
    "compare_impact",
    "impact_of",
]
