"""``forge eval``: exit codes, the table and the JSON report, bad input, and an LLM
planner against the project's fake OpenAI-compatible server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from forge.cli import main

from ..models.openai_fake import FakeOpenAI, running

EVAL = Path(__file__).resolve().parents[3] / "examples" / "eval"
SUITE = str(EVAL / "seed-003.yaml")
GOOD = f"scripted:{EVAL / 'seed-003.answers.yaml'}"
WEAK = f"scripted:{EVAL / 'seed-003.weak-answers.yaml'}"


def test_a_planner_that_passes_every_score_exits_0_with_a_table(capsys):
    code = main(["eval", SUITE, "--planner", GOOD])

    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith("suite seed-003, planner scripted:seed-003.answers.yaml\n")
    assert "case                scenario            validity  fidelity  replan" in out
    assert "total               5 case(s)           5/5       5/5       4/4      5/5" in out


def test_a_planner_that_fails_a_score_exits_1_and_says_why(capsys):
    code = main(["eval", SUITE, "--planner", WEAK])

    out = capsys.readouterr().out
    assert code == 1
    assert "tool-failure replan: 5 of 10 check(s) over 2 replan(s)" in out
    assert "    version 2: the failed call failed again (fetch)" in out


def test_json_prints_the_report(capsys):
    code = main(["eval", SUITE, "--planner", GOOD, "--json", "--case", "tool-failure"])

    report = json.loads(capsys.readouterr().out)
    assert code == 0
    assert report["schema"] == "forge.eval-report/v1"
    [case] = report["cases"]
    assert case["id"] == "tool-failure"
    assert [s["metric"] for s in case["scores"]] == [
        "validity", "fidelity", "replan", "success", "cost",
    ]  # fmt: skip
    assert case["scores"][0]["value"] == 0.5
    assert case["replan_traces"][0]["preserved"] == ["read"]
    assert report["summary"]["metrics"]["success"] == {"passed": 1, "applicable": 1, "mean": 1.0}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["eval", "missing.yaml", "--planner", GOOD], "[suite_unreadable]"),
        (["eval", SUITE, "--planner", "magic:8ball"], "--planner takes scripted:FILE"),
        (["eval", SUITE, "--planner", "scripted:missing.yaml"], "cannot read answers"),
        (["eval", SUITE, "--planner", GOOD, "--case", "nope"], "no case 'nope'"),
        (["eval", SUITE, "--planner", GOOD, "--report-to", "http://forge.test"],
         "FORGE_API_TOKEN"),
    ],
)  # fmt: skip
def test_input_that_cannot_be_used_exits_2_before_anything_runs(argv, message, capsys,
                                                                monkeypatch):  # fmt: skip
    monkeypatch.delenv("FORGE_API_TOKEN", raising=False)

    code = main(argv)

    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert message in captured.err


def test_a_bad_suite_names_its_code_and_place(tmp_path, capsys):
    suite = tmp_path / "suite.yaml"
    suite.write_text("schema: forge.eval/v1\nname: x\ncases: [{id: a, scenario: rainy, goal: g}]\n")

    assert main(["eval", str(suite), "--planner", GOOD]) == 2
    assert "cases[0].scenario: 'rainy' is not one of" in capsys.readouterr().err


def test_answers_for_a_case_the_suite_lacks_are_refused(tmp_path, capsys):
    answers = tmp_path / "answers.yaml"
    answers.write_text("some-other-case: []\n")

    assert main(["eval", SUITE, "--planner", f"scripted:{answers}"]) == 2
    assert "no case 'some-other-case' in suite seed-003" in capsys.readouterr().err


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    with running() as server:
        yield server


def test_an_llm_planner_is_evaluated_against_an_openai_compatible_server(
    fake_openai, tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("FORGE_MODEL_API_KEY", "sk-test")
    answers = json.loads(json.dumps(_answers()["normal-completion"][0]))
    fake_openai.reply("Here is my plan!", tokens=40)  # not a plan: refused, asked again
    fake_openai.reply(json.dumps(answers), tokens=60)

    code = main(["eval", SUITE, "--planner", "llm:fake-model", "--base-url",
                 fake_openai.base_url, "--case", "normal-completion", "--json"])  # fmt: skip

    report = json.loads(capsys.readouterr().out)
    assert code == 0
    assert (report["planner"], report["model"]) == ("llm:fake-model", "fake-model")
    [case] = report["cases"]
    assert case["tokens"] == 100  # the refused answer's 40 count too
    validity = case["scores"][0]
    assert (validity["passed"], validity["value"]) == (True, 0.5)
    assert validity["problems"][0].startswith("invalid_plan_output: ")
    assert [p["tokens"] for p in case["proposals"]] == [40, 60]
    assert len(fake_openai.requests) == 2
    second = fake_openai.messages(1)[-1]["content"]
    # told as the web and the workers tell it (forge.planners.proposals)
    assert "Your answer 1 was refused; write the whole plan again" in second
    assert 'Your refused answer: <tool-data>"Here is my plan!"</tool-data>' in second
    tools = fake_openai.messages(0)[0]["content"]
    assert "- erp.update_supplier (scope erp_write, side effect production)" in tools


def _answers():
    import yaml

    return yaml.safe_load((EVAL / "seed-003.answers.yaml").read_text())
