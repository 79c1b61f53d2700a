"""Result contracts under the seed's names: the rule is the runtime's
(``forge.runtime.contracts``), which the Scheduler applies to every step's output."""

from forge.runtime.contracts import ResultContract, ValidationResult, validate_output

__all__ = ["ResultContract", "ValidationResult", "validate_output"]
