from forge.plan import (
    SCHEMA,
    Budget,
    DoneWhen,
    PlanDocument,
    Step,
    detect_format,
    dump_plan,
    load_plan,
)

SEED_PLAN = PlanDocument(
    schema="forge.plan/v1",
    goal="生成供应商风险分析报告",
    steps=(
        Step(
            id="s1",
            description="读取供应商合同与历史采购数据",
            depends_on=(),
            tools_allowed=("file_search", "sql_read"),
            done_when=DoneWhen(description="合同和采购摘要已形成结构化 facts"),
        ),
    ),
    risk_level="medium",
    requires_approval_before=("external_email", "database_write"),
)


def test_the_seed_example_imports_unchanged_from_json(examples):
    document = load_plan((examples / "agent-step-in-chinese.json").read_bytes(), "json")

    assert document == SEED_PLAN
    assert document.schema == SCHEMA
    assert document.deliverable is None
    assert document.steps[0].done_when == DoneWhen("合同和采购摘要已形成结构化 facts", (), ())
    assert document.steps[0].done_when.verifiable is False


def test_the_seed_example_imports_unchanged_from_yaml(examples):
    text = (examples / "agent-step-in-chinese.json").read_text(encoding="utf-8")

    assert load_plan(text, "yaml") == SEED_PLAN
    assert load_plan(dump_plan(SEED_PLAN, "yaml"), "yaml") == SEED_PLAN


def test_the_seed_example_written_as_block_yaml_imports_unchanged():
    text = """\
goal: 生成供应商风险分析报告
steps:
  - id: s1
    description: 读取供应商合同与历史采购数据
    depends_on: []
    tools_allowed: [file_search, sql_read]
    done_when: 合同和采购摘要已形成结构化 facts
risk_level: medium
requires_approval_before: [external_email, database_write]
"""
    assert load_plan(text, "yaml") == SEED_PLAN


def test_the_specification_yaml_example_imports_with_every_field(examples):
    path = examples / "supplier-risk.yaml"
    source = path.read_bytes()

    document = load_plan(source, detect_format(source, path.name))

    assert document == PlanDocument(
        goal="Generate a supplier risk report",
        deliverable="publish",
        risk_level="medium",
        requires_approval_before=("external_email", "database_write"),
        budget=Budget(max_steps=20, max_tokens=200000, max_cost=5.0),
        max_replans=3,
        steps=(
            Step(
                id="inspect",
                description="Read supplier contracts and purchase history",
                tool="sql_read",
                args={"query": "select * from contracts"},
                tools_allowed=("file_search", "sql_read"),
                done_when=DoneWhen(
                    description="Contracts summarised as structured facts",
                    required_keys=("facts",),
                    checks=("length(facts) > `0`",),
                ),
                timeout_s=30,
                retries=0,
                rollback_hint="nothing to undo",
            ),
        ),
    )


# Files beside the example plans that are not plans: a model's scripted replies, an MCP
# servers file, a policy, the MCP server the README's example starts, and the demo's
# planner script (its plans are read by tests/unit/planners/test_goal_script.py).
NOT_PLANS = {
    "agent/replies.yaml", "mcp/servers.json", "mcp/policy.yaml", "mcp/clock.py",
    "demo/planner.yaml",
}  # fmt: skip


def test_every_example_survives_every_readable_format(examples):
    # examples/eval holds evaluation suites and planners' answers, not plans: the answers'
    # plan documents are read by forge.evaluation (tests/unit/evaluation)
    for path in sorted(p for p in examples.rglob("*") if p.is_file() and p.parent.name != "eval"):
        if path.relative_to(examples).as_posix() in NOT_PLANS:
            continue
        source = path.read_bytes()
        document = load_plan(source, detect_format(source, path.name))
        for fmt in ("json", "yaml", "mermaid"):
            assert load_plan(dump_plan(document, fmt), fmt) == document, (path.name, fmt)


def test_yaml_export_keeps_the_codecs_key_order_in_block_style():
    assert (
        dump_plan(SEED_PLAN, "yaml")
        == """\
schema: forge.plan/v1
goal: 生成供应商风险分析报告
risk_level: medium
requires_approval_before:
- external_email
- database_write
max_replans: 3
steps:
- id: s1
  description: 读取供应商合同与历史采购数据
  depends_on: []
  tools_allowed:
  - file_search
  - sql_read
  done_when: 合同和采购摘要已形成结构化 facts
"""
    )


def test_json_export_is_indented_utf8_in_the_codecs_key_order():
    text = dump_plan(SEED_PLAN, "json")

    assert text.startswith('{\n  "schema": "forge.plan/v1",\n  "goal": "生成供应商风险分析报告",\n')
    assert text.endswith("}\n")
