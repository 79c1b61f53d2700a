import pytest

from forge.tools import Policy, PolicyDecision, PolicyEngine, PolicyError, builtin_registry

SHELL = builtin_registry().get("shell")
ECHO = builtin_registry().get("echo")


def test_a_tool_whose_scope_has_no_allow_list_is_denied_by_default():
    decision = PolicyEngine(Policy()).decide(ECHO)

    assert decision == PolicyDecision(False, "policy does not allow tool 'echo' (scope 'compute')")


def test_an_allow_list_can_name_single_tools_of_a_scope():
    engine = PolicyEngine(Policy(allow={"compute": ("echo",)}))

    assert engine.decide(ECHO).allowed
    assert not engine.decide(builtin_registry().get("sleep")).allowed


def test_a_plan_adds_approval_reasons_but_never_removes_the_policys():
    engine = PolicyEngine(Policy(allow={"shell": ("*",)}, require_approval=("shell",)))

    assert engine.decide(SHELL).approval_reasons == ("policy requires approval for scope 'shell'",)
    assert engine.decide(SHELL, ["shell"]).approval_reasons == (
        "policy requires approval for scope 'shell'",
        "plan requires approval before scope 'shell'",
    )


def test_high_risk_tools_wait_for_approval():
    risky = (
        builtin_registry()
        .get("shell")
        .__class__("deploy", "Deploys", {"type": "object"}, "deploy", "write", False, "high")
    )
    decision = PolicyEngine(Policy.allowing(["deploy"])).decide(risky)

    assert decision.requires_approval
    assert decision.approval_reasons == ("tool 'deploy' is high risk",)


@pytest.mark.parametrize("effect", ["external", "delete", "payment", "production"])
def test_forced_side_effects_wait_for_a_person_and_no_policy_removes_that(effect):
    tool = (
        builtin_registry()
        .get("noop")
        .__class__("act", "Acts", {"type": "object"}, "acts", effect, False, "low")
    )
    lenient = Policy.from_data({"allow": {"acts": ["*"]}, "approve_high_risk": False})

    decision = PolicyEngine(lenient).decide(tool)

    assert decision.approval_reasons == (f"{effect} side effects always need a person's approval",)


def test_a_call_is_decided_by_its_own_side_effect_not_only_its_tools():
    http = builtin_registry().get("http_request")
    engine = PolicyEngine(Policy.allowing(["http"]))

    assert engine.decide(http, (), "read").approval_reasons == ()
    assert engine.decide(http).approval_reasons == (
        "external side effects always need a person's approval",
    )


def test_a_policy_may_let_read_only_replans_continue_and_names_anything_else():
    assert Policy.from_data({"auto_approve_replans": "read_only"}).auto_approve_replans == (
        "read_only"
    )
    assert Policy.from_data({}).auto_approve_replans == "never"
    with pytest.raises(PolicyError, match="auto_approve_replans"):
        Policy.from_data({"auto_approve_replans": "always"})


def test_a_policy_is_read_from_plain_data():
    policy = Policy.from_data({"allow": {"shell": ["shell"]}, "require_approval": ["shell"]})

    assert policy == Policy(allow={"shell": ("shell",)}, require_approval=("shell",))


@pytest.mark.parametrize(
    "data",
    [
        [],
        {"allow": ["shell"]},
        {"allow": {"shell": "shell"}},
        {"deny": {}},
        {"require_approval": "x"},
    ],
)
def test_a_malformed_policy_is_refused_clearly(data):
    with pytest.raises(PolicyError):
        Policy.from_data(data)


def test_a_policy_is_read_from_a_yaml_or_json_file(tmp_path):
    yaml_file = tmp_path / "policy.yaml"
    yaml_file.write_text("allow:\n  shell: [shell]\nrequire_approval: [shell]\n")
    json_file = tmp_path / "policy.json"
    json_file.write_text('{"allow": {"compute": ["*"]}}')

    assert Policy.from_file(yaml_file) == Policy(
        allow={"shell": ("shell",)}, require_approval=("shell",)
    )
    assert Policy.from_file(json_file) == Policy(allow={"compute": ("*",)})


@pytest.mark.parametrize(
    ("name", "text"), [("p.yaml", "allow: [unclosed"), ("p.json", "{"), ("p.yaml", "allow: 3")]
)
def test_an_unreadable_policy_file_is_refused_naming_the_file(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)

    with pytest.raises(PolicyError, match=name):
        Policy.from_file(path)
    with pytest.raises(PolicyError, match="missing.yaml"):
        Policy.from_file(tmp_path / "missing.yaml")
