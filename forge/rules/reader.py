"""Reading a ``forge.rules/v1`` document from JSON or YAML text, strictly.

The text goes through the plan documents' own readers (``forge.plan.formats``: no
repeated key, no YAML tag, bounded depth and size), then every field is checked; the
first problem is refused as ``RulesInvalid`` naming its field and line, so a bad file
or a bad save loses nothing and loosens nothing. Lines come from composing the text
once more with PyYAML (JSON is YAML too), which keeps each node's position.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any

import yaml

from forge.errors import PlanDocumentError
from forge.plan.formats.json_io import parse_json
from forge.plan.formats.source import source_text
from forge.plan.formats.yaml_safe import parse_yaml
from forge.plan.limits import DEFAULT_LIMITS
from forge.rules.document import SCHEMA, Condition, Requirement, Rule, RuleSet
from forge.rules.errors import RulesInvalid
from forge.tools import SIDE_EFFECTS

__all__ = ["read_rules", "rules_from_data"]

Path = tuple[str | int, ...]

_TOP = ("schema", "rules", "default")
_RULE = ("id", "description", "when", "require")
_REQUIRE = ("approvals", "team")
_GLOBS = ("tool", "server", "scope", "host")
_WHEN = ("side_effect", *_GLOBS, "cost_over", "tokens_over", "steps_over")
# Names of tools, MCP servers and scopes never hold spaces or control characters; host
# names are lower case letters, digits, dots, hyphens (and a port's colon, underscores).
_NEVER_IN_A_NAME = re.compile(r"[\s\x00-\x1f\x7f]")
_HOST_GLOB = re.compile(r"[a-z0-9.*?\[\]!:_-]+")


def read_rules(text: str | bytes, *, teams: Collection[str] | None = None) -> RuleSet:
    """The rules ``text`` holds (JSON when it starts with ``{``, else YAML); with
    ``teams``, a team not among them is refused too (``rules_unknown_team``)."""
    try:
        body = source_text(text, DEFAULT_LIMITS)
        if body.lstrip().startswith("{"):
            data = parse_json(body, DEFAULT_LIMITS)
        else:
            data = parse_yaml(body, DEFAULT_LIMITS)
    except PlanDocumentError as error:
        line = _line_in(error.message)
        # The parser's message starts with the line already: said once, by RulesInvalid.
        message = re.sub(rf"^line {line}(, |: )", "", error.message) if line else error.message
        raise RulesInvalid(message, code="rules_syntax", line=line) from None
    return rules_from_data(data, lines=_lines(body), teams=teams)


def rules_from_data(
    data: object,
    *,
    lines: Mapping[Path, int] | None = None,
    teams: Collection[str] | None = None,
) -> RuleSet:
    """The rules plain ``data`` describes (``RuleSet.to_data``'s shape)."""
    return _Reader(lines or {}, teams).document(data)


class _Reader:
    def __init__(self, lines: Mapping[Path, int], teams: Collection[str] | None) -> None:
        self.lines = lines
        self.teams = None if teams is None else set(teams)

    def fail(self, path: Path, message: str, code: str = "rules_bad_value") -> RulesInvalid:
        line = 0
        for end in range(len(path), -1, -1):  # the field's own line, else its parent's
            line = self.lines.get(path[:end], 0)
            if line:
                break
        return RulesInvalid(message, code=code, field=_spelled(path), line=line)

    def mapping(self, value: object, path: Path, keys: tuple[str, ...]) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.fail(path, f"must be a mapping of {', '.join(keys)}")
        for key in value:
            if key not in keys:
                raise self.fail(
                    (*path, key),
                    f"unknown key {key!r}; expected one of {', '.join(keys)}",
                    "rules_unknown_key",
                )
        return value

    def document(self, data: object) -> RuleSet:
        top = self.mapping(data, (), _TOP)
        if top.get("schema") != SCHEMA:
            raise self.fail(("schema",), f"must be {SCHEMA!r}, not {top.get('schema')!r}")
        raw_rules = top.get("rules", [])
        if not isinstance(raw_rules, list):
            raise self.fail(("rules",), "must be a list of rules")
        rules: list[Rule] = []
        seen: set[str] = set()
        for index, raw in enumerate(raw_rules):
            rule = self.rule(raw, ("rules", index))
            if rule.id in seen:
                raise self.fail(("rules", index, "id"), f"the id {rule.id!r} is used twice")
            seen.add(rule.id)
            rules.append(rule)
        default = Requirement()
        if "default" in top:
            default = self.requirement(top["default"], ("default",))
        return RuleSet(tuple(rules), default)

    def rule(self, raw: object, path: Path) -> Rule:
        fields = self.mapping(raw, path, _RULE)
        rule_id = fields.get("id")
        if not isinstance(rule_id, str) or not rule_id.strip():
            raise self.fail((*path, "id"), "every rule needs an id: a non-empty text")
        description = fields.get("description", "")
        if not isinstance(description, str):
            raise self.fail((*path, "description"), "must be a text")
        if "require" not in fields:
            raise self.fail(path, f"rule {rule_id!r} needs a require")
        return Rule(
            id=rule_id.strip(),
            description=description,
            when=self.condition(fields.get("when", {}), (*path, "when")),
            require=self.requirement(fields["require"], (*path, "require")),
        )

    def requirement(self, raw: object, path: Path) -> Requirement:
        fields = self.mapping(raw, path, _REQUIRE)
        approvals = fields.get("approvals", 1)
        if not _is_int(approvals) or approvals < 1:
            raise self.fail(
                (*path, "approvals"),
                f"must be a whole number of people, 1 or more, not {approvals!r}",
            )
        team = fields.get("team")
        if team is not None:
            if not isinstance(team, str) or not team.strip():
                raise self.fail((*path, "team"), "must be a team's name")
            team = team.strip()
            if self.teams is not None and team not in self.teams:
                raise self.fail((*path, "team"), f"there is no team {team!r}", "rules_unknown_team")
        return Requirement(approvals=approvals, team=team)

    def condition(self, raw: object, path: Path) -> Condition:
        fields = self.mapping(raw, path, _WHEN)
        values: dict[str, Any] = {}
        for key in ("side_effect", *_GLOBS):
            if key in fields:
                values[key] = self.texts(fields[key], (*path, key), key)
        for key, kind in (
            ("cost_over", _is_number),
            ("tokens_over", _is_int),
            ("steps_over", _is_int),
        ):
            if key in fields:
                value = fields[key]
                if not kind(value) or value < 0:
                    what = "number" if key == "cost_over" else "whole number"
                    raise self.fail((*path, key), f"must be a {what}, 0 or more, not {value!r}")
                values[key] = float(value) if key == "cost_over" else value
        return Condition(**values)

    def texts(self, raw: object, path: Path, key: str) -> tuple[str, ...]:
        items = [raw] if isinstance(raw, str) else raw
        if not isinstance(items, list) or not items:
            raise self.fail(path, "must be a text or a non-empty list of texts")
        out: list[str] = []
        for index, item in enumerate(items):
            where = path if isinstance(raw, str) else (*path, index)
            if not isinstance(item, str):
                raise self.fail(where, f"must be a text, not {item!r}")
            if key == "side_effect":
                if item not in SIDE_EFFECTS:
                    raise self.fail(
                        where,
                        f"{item!r} is no side-effect class; "
                        f"expected one of {', '.join(SIDE_EFFECTS)}",
                        "rules_never_match",
                    )
            else:
                self.glob(item, where, key)
            out.append(item)
        return tuple(dict.fromkeys(out))

    def glob(self, glob: str, path: Path, key: str) -> None:
        if not glob or _NEVER_IN_A_NAME.search(glob):
            raise self.fail(
                path,
                f"the glob {glob!r} can never match: a {key} name has no space",
                "rules_never_match",
            )
        if key == "host" and not _HOST_GLOB.fullmatch(glob):
            raise self.fail(
                path,
                f"the glob {glob!r} can never match a host name "
                "(lower case letters, digits, dots and hyphens)",
                "rules_never_match",
            )


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _spelled(path: Path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


def _line_in(message: str) -> int:
    found = re.search(r"line (\d+)", message)
    return int(found.group(1)) if found else 0


def _lines(text: str) -> dict[Path, int]:
    """Each field's line (1-based): a key's own line for mappings, the item's for lists."""
    try:
        root = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:  # e.g. JSON that YAML reads differently: lines stay unknown
        return {}
    lines: dict[Path, int] = {}
    _walk(root, (), lines)
    return lines


def _walk(node: yaml.Node | None, path: Path, lines: dict[Path, int]) -> None:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                child = (*path, key.value)
                lines[child] = key.start_mark.line + 1
                _walk(value, child, lines)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            lines[(*path, index)] = item.start_mark.line + 1
            _walk(item, (*path, index), lines)
