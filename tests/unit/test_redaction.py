"""forge.redaction: secrets by key at any depth, and credentials inside free text."""

from __future__ import annotations

import pytest

from forge.redaction import REDACTED, is_secret_key, redact, redact_text

GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2  # 40 characters after the prefix
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkFkYSJ9"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF0qJ0Z3VS5JJcds3xfn\n"
    "-----END RSA PRIVATE KEY-----"
)


# --- Keys ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key", ["password", "DB_PASSWORD", "client_secret", "X-Api-Key", "token", "csrf_token"]
)
def test_keys_that_name_a_secret_are_secret(key):
    assert is_secret_key(key)


@pytest.mark.parametrize("key", ["max_tokens", "tokens", "name", "comment", "note"])
def test_keys_that_do_not_name_a_secret_are_kept(key):
    assert not is_secret_key(key)


def test_a_secret_key_hides_its_value_at_any_depth():
    assert redact({"a": [{"Password": "x", "n": 1}], "max_tokens": 5}) == {
        "a": [{"Password": REDACTED, "n": 1}],
        "max_tokens": 5,
    }


# --- Credentials by their shape -----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("key AKIAIOSFODNN7EXAMPLE in use", "key [redacted] in use"),
        ("temporary ASIAY34FZKBOKMUTVV7A", "temporary [redacted]"),
        (f"pushed with {GITHUB_TOKEN}.", "pushed with [redacted]."),
        ("gho_" + "x" * 36, REDACTED),
        ("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", REDACTED),
        ("slack xoxb-1234567890-abcdefghij ok", "slack [redacted] ok"),
        ("sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8t", REDACTED),
        ("openai sk-9aBcDeFgHiJkLmNoPqRsT12 here", "openai [redacted] here"),
        (f"cookie was {JWT}", "cookie was [redacted]"),
        (f"key:\n{PEM}\nthanks", "key:\n[redacted]\nthanks"),
        ("-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0B", REDACTED),
        ("curl -H 'Authorization: Bearer abc.def'", "curl -H 'Authorization: [redacted]'"),
        ("use forge_0123456789ab_" + "x" * 43, "use [redacted]"),
    ],
)
def test_credentials_in_free_text_are_replaced_and_the_rest_is_kept(text, expected):
    assert redact_text(text) == expected


def test_a_url_keeps_its_user_and_host_but_not_its_password():
    assert (
        redact_text("clone https://deploy:hunter2@git.example.com/repo.git now")
        == "clone https://deploy:[redacted]@git.example.com/repo.git now"
    )


# --- Assignments ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("password=hunter2", "password=[redacted]"),
        ("the secret: s3cr3t, then", "the secret: [redacted], then"),
        ("api_key = 'abc def' ok", "api_key = '[redacted]' ok"),
        ('{"token": "t0k", "n": 1}', '{"token": "[redacted]", "n": 1}'),
        ("export DB_PASSWORD=p4ss", "export DB_PASSWORD=[redacted]"),
        ("?user=ada&access_token=xyz&page=2", "?user=ada&access_token=[redacted]&page=2"),
        ("Authorization: Basic QWxhZGRpbjpvcGVu", "Authorization: [redacted]"),
        ('note="password=hunter2"', 'note="password=[redacted]"'),
        ("step failed: Authorization: Basic QWxh", "step failed: Authorization: [redacted]"),
    ],
)
def test_the_value_of_a_secret_assignment_goes_and_its_name_stays(text, expected):
    assert redact_text(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "max_tokens: 5",
        "budget tokens=200000",
        "we use sk-learn and scikit-learn-extra-tools here",
        "a basic check at 10:30, see https://example.com/a:b",
        "ghp_short",
        "akiaiosfodnn7example in lower case",
        "eyJ alone",
        "The password policy changed.",
    ],
)
def test_ordinary_text_is_left_alone(text):
    assert redact_text(text) == text


def test_redacting_twice_changes_nothing_more():
    text = f"password=hunter2 {GITHUB_TOKEN} https://u:p@h/ Authorization: Bearer x"
    once = redact_text(text)

    assert redact_text(once) == once
    assert once == (
        "password=[redacted] [redacted] https://u:[redacted]@h/ Authorization: [redacted]"
    )


def test_strings_inside_payloads_are_redacted_as_free_text():
    assert redact({"comment": f"ok, token is {GITHUB_TOKEN}", "steps": ["password=x"]}) == {
        "comment": "ok, token is [redacted]",
        "steps": ["password=[redacted]"],
    }
