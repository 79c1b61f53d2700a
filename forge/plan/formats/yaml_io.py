"""The YAML format: bounded safe loading in, readable block-style ``safe_dump`` out.

The output keeps the codec's key order (``sort_keys=False``) so a YAML plan reads like the
example in the specification: schema and goal first, steps last.
"""

from __future__ import annotations

import yaml

from forge.plan.codec import from_data, to_data
from forge.plan.document import PlanDocument
from forge.plan.formats.yaml_safe import parse_yaml
from forge.plan.limits import ImportLimits

__all__ = ["dump_yaml", "load_yaml"]


def load_yaml(text: str, limits: ImportLimits) -> PlanDocument:
    return from_data(parse_yaml(text, limits), limits)


def dump_yaml(document: PlanDocument) -> str:
    text: str = yaml.dump(
        to_data(document),
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=100,
    )
    return text


class _Dumper(yaml.SafeDumper):
    """``SafeDumper``, except that it never writes a line-break character raw."""


def _represent_str(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    # PyYAML writes U+0085, U+2028 and U+2029 as they are in plain and single-quoted
    # scalars, where its own reader then folds them into spaces; double quotes escape them.
    style = '"' if any(char in text for char in "\x85\u2028\u2029") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_Dumper.add_representer(str, _represent_str)
