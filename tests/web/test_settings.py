"""Settings from the environment: databases, channels, production mode and its deploy check."""

from __future__ import annotations

import os
import runpy
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.exceptions import ImproperlyConfigured
from django.db import OperationalError, connections, transaction
from django.db.utils import ConnectionHandler

from forge_web.databases import PoolSize, database_from_url
from forge_web.env import envbool, envchoice, envint, envlist

ROOT = Path(django_settings.BASE_DIR)
SETTINGS_FILE = ROOT / "forge_web" / "settings.py"
PRODUCTION_ENV = {
    "FORGE_PRODUCTION": "1",
    "SECRET_KEY": secrets.token_urlsafe(50),
    "ALLOWED_HOSTS": "forge.example.com",
}
FORGE_VARIABLES = (
    "DEBUG",
    "FORGE_PRODUCTION",
    "SECRET_KEY",
    "ALLOWED_HOSTS",
    "REDIS_URL",
    "DATABASE_URL",
    "FORGE_API_RATE",
    "FORGE_API_COMPILE_RATE",
    "FORGE_API_ANON_RATE",
    "FORGE_TEST_DATABASE_NAME",
    "FORGE_DB_POOL",
    "FORGE_DB_POOL_MIN",
    "FORGE_DB_POOL_MAX",
    "FORGE_DB_POOL_TIMEOUT",
    "CONN_MAX_AGE",
)


@pytest.fixture
def load_settings(monkeypatch):
    """``load_settings(**env)``: the settings module's values as they would be under ``env``."""

    def load(**env):
        for name in FORGE_VARIABLES:
            monkeypatch.delenv(name, raising=False)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        return runpy.run_path(str(SETTINGS_FILE))

    return load


# --- Readers ----------------------------------------------------------------------------


def test_env_readers_parse_and_refuse_bad_values(monkeypatch):
    monkeypatch.setenv("X_BOOL", "Yes")
    monkeypatch.setenv("X_INT", "12")
    monkeypatch.setenv("X_LIST", " a, b ,,c ")
    monkeypatch.setenv("X_CHOICE", "INFO")

    assert (envbool("X_BOOL", False), envint("X_INT", 0), envlist("X_LIST", [])) == (
        True,
        12,
        ["a", "b", "c"],
    )
    assert envchoice("X_CHOICE", "DEBUG", ("DEBUG", "INFO")) == "INFO"
    assert (envbool("X_UNSET", True), envint("X_UNSET", 7), envlist("X_UNSET", ["d"])) == (
        True,
        7,
        ["d"],
    )
    monkeypatch.setenv("X_BOOL", "maybe")
    with pytest.raises(ImproperlyConfigured, match="X_BOOL must be a boolean"):
        envbool("X_BOOL", False)
    monkeypatch.setenv("X_INT", "-1")
    with pytest.raises(ImproperlyConfigured, match="X_INT must be at least 0"):
        envint("X_INT", 0, minimum=0)


# --- Databases --------------------------------------------------------------------------


@pytest.fixture
def sqlite_file(tmp_path, monkeypatch, django_db_blocker):
    """``sqlite_file(alias, **options)``: a connection to one SQLite file, as settings make it."""
    url = f"sqlite:///{tmp_path / 'forge.sqlite3'}"
    aliases = []

    def open_alias(alias, **options):
        config = ConnectionHandler({"default": database_from_url(url, **options)}).settings[
            "default"
        ]
        monkeypatch.setitem(connections.settings, alias, config)
        aliases.append(alias)
        return connections[alias]

    with django_db_blocker.unblock():
        yield open_alias
        for alias in aliases:
            connections[alias].close()
            del connections[alias]


def test_sqlite_runs_in_wal_mode_with_a_busy_timeout(sqlite_file):
    connection = sqlite_file("probe", busy_timeout=7)

    with connection.cursor() as cursor:
        journal = cursor.execute("PRAGMA journal_mode").fetchone()[0]
        busy = cursor.execute("PRAGMA busy_timeout").fetchone()[0]

    assert (journal, busy) == ("wal", 7000)


def test_sqlite_transactions_take_the_write_lock_when_they_begin(sqlite_file):
    sqlite_file("first")
    sqlite_file("second", busy_timeout=0)

    with transaction.atomic(using="first"):  # holds the write lock before writing anything
        with pytest.raises(OperationalError, match="locked"), transaction.atomic(using="second"):
            pass


def test_postgres_without_a_pool_keeps_connections_and_checks_them():
    config = database_from_url("postgres://forge@db.example.com:5432/forge", conn_max_age=300)

    assert config["ENGINE"] == "django.db.backends.postgresql"
    assert (config["CONN_MAX_AGE"], config["CONN_HEALTH_CHECKS"]) == (300, True)
    assert "pool" not in config.get("OPTIONS", {})


def test_postgres_with_a_pool_borrows_connections_and_keeps_none_per_thread():
    config = database_from_url(
        "postgres://forge@db.example.com:5432/forge",
        conn_max_age=300,
        pool=PoolSize(min_size=1, max_size=7, timeout_s=4.0),
    )

    assert config["ENGINE"] == "forge_web.postgresql"
    assert (config["CONN_MAX_AGE"], config["CONN_HEALTH_CHECKS"]) == (0, True)
    assert config["OPTIONS"]["pool"] == {
        "min_size": 1,
        "max_size": 7,
        "timeout": 4.0,
        "reconnect_timeout": 1.0,
    }


def test_sqlite_has_no_pool_whatever_the_settings():
    config = database_from_url("sqlite:///x.sqlite3", pool=PoolSize(2, 10, 10.0))

    assert config["ENGINE"] == "forge_web.sqlite"
    assert config["CONN_MAX_AGE"] == 0
    assert "pool" not in config["OPTIONS"]


def test_the_pool_is_on_for_postgres_by_default_and_sized_by_settings(load_settings):
    pooled = load_settings(
        DATABASE_URL="postgres://forge@db.example.com/forge",
        FORGE_DB_POOL_MIN="3",
        FORGE_DB_POOL_MAX="12",
        FORGE_DB_POOL_TIMEOUT="2.5",
    )["DATABASES"]["default"]
    unpooled = load_settings(
        DATABASE_URL="postgres://forge@db.example.com/forge", FORGE_DB_POOL="0"
    )["DATABASES"]["default"]

    assert pooled["CONN_MAX_AGE"] == 0
    assert pooled["OPTIONS"]["pool"]["min_size"] == 3
    assert pooled["OPTIONS"]["pool"]["max_size"] == 12
    assert pooled["OPTIONS"]["pool"]["timeout"] == 2.5
    assert unpooled["ENGINE"] == "django.db.backends.postgresql"
    assert unpooled["CONN_MAX_AGE"] == 600


def test_a_pool_whose_least_exceeds_its_most_is_refused_by_name(load_settings):
    with pytest.raises(ImproperlyConfigured, match="FORGE_DB_POOL_MIN .* FORGE_DB_POOL_MAX"):
        load_settings(
            DATABASE_URL="postgres://forge@db.example.com/forge",
            FORGE_DB_POOL_MIN="5",
            FORGE_DB_POOL_MAX="4",
        )
    with pytest.raises(ValueError, match="max_size >= 1"):
        PoolSize(0, 0, 1.0)


def test_the_default_database_is_sqlite_next_to_the_code(load_settings):
    database = load_settings()["DATABASES"]["default"]

    assert database["NAME"] == str(ROOT / "db.sqlite3")
    assert database["OPTIONS"]["transaction_mode"] == "IMMEDIATE"


def test_a_test_run_may_name_its_own_test_database(load_settings):
    named = load_settings(
        DATABASE_URL="postgres://forge@db.example.com:5432/forge",
        FORGE_TEST_DATABASE_NAME="test_forge_ci_7",
    )["DATABASES"]["default"]

    assert named["TEST"] == {"NAME": "test_forge_ci_7"}
    assert "TEST" not in load_settings()["DATABASES"]["default"]


# --- Channels ---------------------------------------------------------------------------


def test_channels_use_redis_when_redis_url_is_set(load_settings):
    layers = load_settings(REDIS_URL="redis://cache.example.com:6379/1")["CHANNEL_LAYERS"]

    assert layers == {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {
                "hosts": [
                    {
                        "address": "redis://cache.example.com:6379/1",
                        "max_connections": 200,
                        "socket_timeout": 30,
                        "socket_connect_timeout": 5,
                        "socket_keepalive": True,
                        "health_check_interval": 30,
                        "retry_on_timeout": True,
                    }
                ],
                "capacity": 1000,
                "expiry": 60,
            },
        }
    }


def test_redis_timeouts_that_would_cut_an_idle_listener_are_refused(load_settings):
    with pytest.raises(ImproperlyConfigured, match="FORGE_REDIS_SOCKET_TIMEOUT"):
        load_settings(REDIS_URL="redis://cache:6379/1", FORGE_REDIS_SOCKET_TIMEOUT="5")


def test_channels_stay_in_memory_without_redis(load_settings):
    assert (
        load_settings()["CHANNEL_LAYERS"]["default"]["BACKEND"]
        == "channels.layers.InMemoryChannelLayer"
    )


# --- Request rates and the cache that counts them ----------------------------------------


def test_the_api_rates_have_defaults_and_may_be_set_or_turned_off(load_settings):
    default = load_settings()
    tuned = load_settings(
        FORGE_API_RATE="20/10s", FORGE_API_COMPILE_RATE="", FORGE_API_ANON_RATE="5/min"
    )

    assert (
        default["FORGE_API_RATE"],
        default["FORGE_API_COMPILE_RATE"],
        default["FORGE_API_ANON_RATE"],
    ) == ("600/min", "120/min", "300/min")
    assert (
        tuned["FORGE_API_RATE"],
        tuned["FORGE_API_COMPILE_RATE"],
        tuned["FORGE_API_ANON_RATE"],
    ) == ("20/10s", "", "5/min")


@pytest.mark.parametrize("rate", ["600", "600/minute", "0/min", "-1/s", "ten/min", "5/0s"])
def test_a_rate_that_is_not_one_is_refused_at_start_up(load_settings, rate):
    with pytest.raises(ImproperlyConfigured, match="FORGE_API_RATE must be a rate"):
        load_settings(FORGE_API_RATE=rate)


def test_the_counts_are_shared_in_redis_when_redis_url_is_set(load_settings):
    caches = load_settings(REDIS_URL="redis://cache.example.com:6379/1")["CACHES"]

    assert caches["default"]["BACKEND"] == "django.core.cache.backends.redis.RedisCache"
    assert caches["default"]["LOCATION"] == "redis://cache.example.com:6379/1"


def test_without_redis_each_process_counts_in_its_own_memory(load_settings):
    assert "CACHES" not in load_settings()  # Django's default: local memory


# --- Production mode --------------------------------------------------------------------


def test_production_mode_turns_on_https_protections(load_settings):
    values = load_settings(**PRODUCTION_ENV, SECURE_PROXY_SSL_HEADER="HTTP_X_FORWARDED_PROTO,https")

    assert values["DEBUG"] is False
    assert (
        values["SECURE_SSL_REDIRECT"]
        and values["SESSION_COOKIE_SECURE"]
        and values["CSRF_COOKIE_SECURE"]
    )
    assert values["SECURE_HSTS_SECONDS"] == 31_536_000
    assert values["SECURE_PROXY_SSL_HEADER"] == ("HTTP_X_FORWARDED_PROTO", "https")
    assert values["ALLOWED_HOSTS"] == ["forge.example.com"]


def test_each_production_protection_can_be_tuned(load_settings):
    values = load_settings(**PRODUCTION_ENV, SECURE_HSTS_SECONDS="60", SECURE_SSL_REDIRECT="0")

    assert (values["SECURE_HSTS_SECONDS"], values["SECURE_SSL_REDIRECT"]) == (60, False)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"SECRET_KEY": ""}, "SECRET_KEY must be set"),
        ({"ALLOWED_HOSTS": ""}, "ALLOWED_HOSTS must name"),
        ({"DEBUG": "1"}, "DEBUG must be off"),
        ({"SECURE_PROXY_SSL_HEADER": "X_FORWARDED_PROTO"}, "SECURE_PROXY_SSL_HEADER must be"),
    ],
)
def test_production_mode_refuses_an_unsafe_configuration(load_settings, env, message):
    with pytest.raises(ImproperlyConfigured, match=message):
        load_settings(**{**PRODUCTION_ENV, **env})


# --- The development secret key ------------------------------------------------------


@pytest.mark.parametrize(
    "hosts",
    ["forge.example.com", "localhost,forge.example.com", "*", "10.0.0.5", ".example.com"],
)
def test_the_development_key_is_refused_when_allowed_hosts_names_a_non_local_host(
    load_settings, hosts
):
    with pytest.raises(ImproperlyConfigured, match="development SECRET_KEY") as caught:
        load_settings(ALLOWED_HOSTS=hosts)

    assert "FORGE_PRODUCTION" not in os.environ
    assert "set SECRET_KEY" in str(caught.value)


def test_the_development_key_is_refused_even_when_set_explicitly(load_settings):
    development_key = load_settings()["SECRET_KEY"]

    with pytest.raises(ImproperlyConfigured, match="development SECRET_KEY"):
        load_settings(SECRET_KEY=development_key, ALLOWED_HOSTS="forge.example.com")


@pytest.mark.parametrize(
    "hosts",
    ["localhost,127.0.0.1,[::1],::1,testserver", "forge.localhost,.localhost", "127.0.0.2", ""],
)
def test_the_development_key_serves_local_hosts_only(load_settings, hosts):
    assert load_settings(ALLOWED_HOSTS=hosts)["ALLOWED_HOSTS"] == [
        host.strip() for host in hosts.split(",") if host.strip()
    ]


def test_a_real_key_may_serve_any_host_outside_production_mode(load_settings):
    values = load_settings(SECRET_KEY=secrets.token_urlsafe(50), ALLOWED_HOSTS="forge.example.com")

    assert values["ALLOWED_HOSTS"] == ["forge.example.com"]


def test_the_deploy_check_passes_in_production_mode():
    env = {k: v for k, v in os.environ.items() if k not in FORGE_VARIABLES}
    if shutil.which("bwrap") is None:
        # Rightly warned about (runs.checks), but not what this test is about.
        env["SILENCED_SYSTEM_CHECKS"] = "forge.W001"
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env={**env, **PRODUCTION_ENV},
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode == 0, result.stderr
    assert "System check identified no issues" in result.stdout
