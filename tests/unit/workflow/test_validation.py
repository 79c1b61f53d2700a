from forge.workflow import ResultContract, ValidationResult, validate_output

TESTS_PASSED = ResultContract(required_keys=("tests",), checks=(lambda o: o["tests"] == "passed",))


def test_an_output_that_reports_failed_tests_is_invalid_under_a_contract_that_wants_passed():
    assert validate_output({"tests": "failed"}, TESTS_PASSED) == ValidationResult(
        False, ("check 1 failed",)
    )


def test_an_output_that_meets_the_contract_is_valid():
    assert validate_output({"tests": "passed"}, TESTS_PASSED) == ValidationResult(True, ())


def test_a_non_object_output_gives_only_the_object_error():
    for output in (None, "passed", ["tests"], 3):
        assert validate_output(output, TESTS_PASSED) == ValidationResult(
            False, ("output must be an object",)
        )


def test_each_missing_key_and_each_failed_check_is_an_error_numbered_from_one():
    contract = ResultContract(
        required_keys=("facts", "sources"),
        checks=(lambda o: True, lambda o: len(o.get("facts", [])) > 0, lambda o: False),
    )

    result = validate_output({}, contract)

    assert result == ValidationResult(
        False,
        (
            "missing required key: facts",
            "missing required key: sources",
            "check 2 failed",
            "check 3 failed",
        ),
    )


def test_a_check_that_raises_counts_as_failed():
    contract = ResultContract(checks=(lambda o: o["absent"] == 1,))

    assert validate_output({}, contract) == ValidationResult(False, ("check 1 failed",))


def test_validation_does_not_change_the_output():
    output = {"tests": "passed", "nested": {"a": [1]}}
    before = repr(output)

    validate_output(output, TESTS_PASSED)

    assert repr(output) == before
