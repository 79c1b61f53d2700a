"""Forge's Django settings, read from the environment (every variable: docs/configuration.md).

Two modes. Development (the default) works from a fresh checkout: SQLite next to the code,
a fixed secret key, localhost only. Production (``FORGE_PRODUCTION=1``) refuses to start
without a real ``SECRET_KEY`` and ``ALLOWED_HOSTS`` and turns on HTTPS-only cookies, HSTS and
the SSL redirect, so that ``manage.py check --deploy --fail-level WARNING`` passes; each of
those is still tunable on its own.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

from accounts.sso_startup import SSO_BACKEND, oidc_settings_problem, parse_role_map
from forge.plan import DEFAULT_LIMITS
from forge_web.databases import PoolSize, database_from_url
from forge_web.env import (
    envbool,
    envchoice,
    envfloat,
    envhosts,
    envint,
    envlist,
    envrate,
    envstr,
)
from forge_web.hosts import non_local_hosts

BASE_DIR = Path(__file__).resolve().parent.parent

# --- Mode, secrets, hosts -----------------------------------------------------------

PRODUCTION = envbool("FORGE_PRODUCTION", False)
DEBUG = envbool("DEBUG", False)
if PRODUCTION and DEBUG:
    raise ImproperlyConfigured("DEBUG must be off when FORGE_PRODUCTION=1")

_DEV_SECRET = "forge-development-only-secret-key-never-use-in-production-0123456789"
SECRET_KEY = envstr("SECRET_KEY", "" if PRODUCTION else _DEV_SECRET)
if PRODUCTION and (not SECRET_KEY or SECRET_KEY == _DEV_SECRET):
    raise ImproperlyConfigured(
        "SECRET_KEY must be set to a long random value when FORGE_PRODUCTION=1"
    )

ALLOWED_HOSTS = envlist(
    "ALLOWED_HOSTS", [] if PRODUCTION else ["localhost", "127.0.0.1", "[::1]", "testserver"]
)
if PRODUCTION and not ALLOWED_HOSTS:
    raise ImproperlyConfigured("ALLOWED_HOSTS must name the site's host(s) when FORGE_PRODUCTION=1")
# The development key is in the repository: whatever it signs anyone can forge. Without
# FORGE_PRODUCTION that is tolerable only while the site answers to loopback names alone.
if SECRET_KEY == _DEV_SECRET and (public := non_local_hosts(ALLOWED_HOSTS)):
    raise ImproperlyConfigured(
        f"the development SECRET_KEY is public, but ALLOWED_HOSTS names {public[0]!r}, "
        "which is not a local host: set SECRET_KEY to a long random value (and "
        "FORGE_PRODUCTION=1 for a site others reach), or list only local hosts"
    )
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS", [])

# --- Applications ---------------------------------------------------------------------

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "django_tasks_db",
    "ninja",  # serves the API docs' Swagger UI from our own static files, not a CDN
    "axes",  # login throttling; before forge_web, whose audit receivers read what axes decided
    "oauth2_provider",  # MCP authorization: the OAuth 2.1 server of /mcp and /mcp/gateway
    "accounts",
    "audit",
    "plans",
    "evaluations",
    "runs",
    "gateway",
    "reviews",
    "forge_web.apps.ForgeWebConfig",  # last: wires the apps below it together
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Before the session is read: an address the API keeps refusing (401) is answered 429
    # without its credentials being looked at (accounts.throttling).
    "accounts.throttling.RefusedRequestsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Every page needs a login unless its view says otherwise (@login_not_required);
    # the API answers 401 itself, so forge_web.urls marks its views as exempt.
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as django-axes requires: turns a login refused for a lockout into its answer.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "forge_web.urls"
ASGI_APPLICATION = "forge_web.asgi.application"
WSGI_APPLICATION = "forge_web.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Accounts -------------------------------------------------------------------------

AUTH_USER_MODEL = "accounts.User"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"
# AxesStandaloneBackend first: it refuses a locked-out login before any password is checked.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# Login throttling (django-axes, docs/security.md). Failures are counted per username and,
# separately, per address: the first stops guessing one account from many addresses, the
# second one address guessing many accounts (password spraying). Either count reaching the
# limit refuses logins, right password or not, until the cool-off has passed since the
# last counted failure; attempts during a lockout are refused without being counted, so
# they neither extend it nor cost a write. Counts live in the database, shared by every
# web process. The address is the connection's (REMOTE_ADDR): behind a proxy, the ASGI
# server must be told to trust its X-Forwarded-For (FORGE_FORWARDED_ALLOW_IPS).
FORGE_LOGIN_FAILURE_LIMIT = envint("FORGE_LOGIN_FAILURE_LIMIT", 10, minimum=1)
FORGE_LOGIN_COOLOFF_MINUTES = envint("FORGE_LOGIN_COOLOFF_MINUTES", 15, minimum=1)
AXES_FAILURE_LIMIT = FORGE_LOGIN_FAILURE_LIMIT
AXES_COOLOFF_TIME = timedelta(minutes=FORGE_LOGIN_COOLOFF_MINUTES)
# Per username and per address for passwords; per address alone for a single sign-on
# callback, which names no one until the provider has answered (accounts.lockout).
AXES_LOCKOUT_PARAMETERS = "accounts.lockout.lockout_parameters"
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_LOCKOUT_CALLABLE = "accounts.lockout.lockout_response"
AXES_DISABLE_ACCESS_LOG = True  # successful logins are in Forge's audit trail already
AXES_ENABLE_ADMIN = False

# Single sign-on with OpenID Connect (accounts.sso_*, docs/configuration.md), off unless
# FORGE_OIDC_ISSUER is set: then its backend joins AUTHENTICATION_BACKENDS and the login
# page offers "Sign in with SSO"; off, nothing of it is imported or asked. The provider's
# endpoints come from its discovery document at the first sign-in, not at start-up.
FORGE_OIDC_ISSUER = envstr("FORGE_OIDC_ISSUER", "").strip()
FORGE_OIDC_CLIENT_ID = envstr("FORGE_OIDC_CLIENT_ID", "").strip()
FORGE_OIDC_CLIENT_SECRET = envstr("FORGE_OIDC_CLIENT_SECRET", "")
FORGE_OIDC_SCOPES = envstr("FORGE_OIDC_SCOPES", "openid email profile").strip()
FORGE_OIDC_SIGN_ALGO = envchoice(
    "FORGE_OIDC_SIGN_ALGO", "RS256", ("RS256", "RS384", "RS512", "ES256", "ES384", "ES512")
)
FORGE_OIDC_USERNAME_CLAIM = envstr("FORGE_OIDC_USERNAME_CLAIM", "preferred_username").strip()
FORGE_OIDC_GROUPS_CLAIM = envstr("FORGE_OIDC_GROUPS_CLAIM", "groups").strip()
FORGE_OIDC_ROLE_CLAIM = envstr("FORGE_OIDC_ROLE_CLAIM", "").strip()
try:
    FORGE_OIDC_ROLE_MAP = parse_role_map(envstr("FORGE_OIDC_ROLE_MAP", ""))
except ValueError as _exc:
    raise ImproperlyConfigured(f"FORGE_OIDC_ROLE_MAP: {_exc}") from None
FORGE_OIDC_TIMEOUT_SECONDS = envfloat("FORGE_OIDC_TIMEOUT_SECONDS", 10.0, minimum=0.1)
# Off: the login page has no password form and a password POST is refused (403); API
# tokens still work. Needs single sign-on, or no one could log in to the pages.
FORGE_PASSWORD_LOGIN = envbool("FORGE_PASSWORD_LOGIN", True)
if problem := oidc_settings_problem(
    issuer=FORGE_OIDC_ISSUER,
    client_id=FORGE_OIDC_CLIENT_ID,
    client_secret=FORGE_OIDC_CLIENT_SECRET,
    scopes=FORGE_OIDC_SCOPES,
    password_login=FORGE_PASSWORD_LOGIN,
):
    raise ImproperlyConfigured(problem)
if FORGE_OIDC_ISSUER:
    AUTHENTICATION_BACKENDS.append(SSO_BACKEND)

# MCP authorization (SPEC section 11, accounts.oauth_*, docs/agents.md): Forge is the
# OAuth 2.1 authorization server of /mcp and /mcp/gateway (django-oauth-toolkit). A host
# registers itself (RFC 7591, public clients only: accounts.oauth_registration), a person
# consents on Forge's page, and the access token acts as that person, scope "mcp" only.
# Authorization code with PKCE S256 only; no implicit, password or client-credentials grant.
FORGE_OAUTH_ACCESS_TOKEN_SECONDS = envint("FORGE_OAUTH_ACCESS_TOKEN_SECONDS", 3600, minimum=60)
FORGE_OAUTH_REFRESH_TOKEN_SECONDS = envint(
    "FORGE_OAUTH_REFRESH_TOKEN_SECONDS", 30 * 24 * 3600, minimum=60
)
# Registrations per client address (open registration: no one is signed in yet).
FORGE_OAUTH_REGISTRATION_RATE = envrate("FORGE_OAUTH_REGISTRATION_RATE", "30/h")
OAUTH2_PROVIDER = {
    "SCOPES": {"mcp": "Use Forge's MCP tools and gateway as you, with your roles"},
    "DEFAULT_SCOPES": ["mcp"],
    "PKCE_REQUIRED": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,  # S256 only: "plain" is refused
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    "OAUTH2_RESPONSE_TYPES_SUPPORTED": ["code"],
    "OAUTH2_GRANT_TYPES_SUPPORTED": ["authorization_code", "refresh_token"],
    "OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED": ["none"],
    "ACCESS_TOKEN_EXPIRE_SECONDS": FORGE_OAUTH_ACCESS_TOKEN_SECONDS,
    "REFRESH_TOKEN_EXPIRE_SECONDS": FORGE_OAUTH_REFRESH_TOKEN_SECONDS,
    "ROTATE_REFRESH_TOKEN": True,
    # RFC 9700: a replayed refresh token revokes its whole family; tokens are kept as
    # digests only; an access token is taken from the Authorization header only.
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
    "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,
    "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
    # Open registration, as MCP hosts expect; accounts.oauth_registration admits public
    # clients of the authorization code grant only, before the library's view sees them.
    "DCR_ENABLED": True,
    "DCR_REGISTRATION_PERMISSION_CLASSES": ("oauth2_provider.dcr.AllowAllDCRPermission",),
    "OAUTH2_PROTECTED_RESOURCE_NAME": "Forge MCP",
}

# --- Database, tasks, channels --------------------------------------------------------

# PostgreSQL: each process borrows connections from a pool of its own (forge_web.databases)
# of at most FORGE_DB_POOL_MAX, however many requests it serves at once; a worker's pool
# is sized by its slots instead (runs.capacity). FORGE_DB_POOL=0 goes back to a
# connection per thread kept for CONN_MAX_AGE seconds. docs/deployment.md budgets them
# against the server's max_connections.
FORGE_DB_POOL = envbool("FORGE_DB_POOL", True)
FORGE_DB_POOL_MIN = envint("FORGE_DB_POOL_MIN", 2, minimum=0)
FORGE_DB_POOL_MAX = envint("FORGE_DB_POOL_MAX", 10, minimum=1)
FORGE_DB_POOL_TIMEOUT = envfloat("FORGE_DB_POOL_TIMEOUT", 10.0, minimum=0.1)
if FORGE_DB_POOL_MIN > FORGE_DB_POOL_MAX:
    raise ImproperlyConfigured(
        f"FORGE_DB_POOL_MIN ({FORGE_DB_POOL_MIN}) must not exceed "
        f"FORGE_DB_POOL_MAX ({FORGE_DB_POOL_MAX})"
    )
DATABASES = {
    "default": database_from_url(
        envstr("DATABASE_URL", f"sqlite:///{BASE_DIR / 'db.sqlite3'}"),
        conn_max_age=envint("CONN_MAX_AGE", 600, minimum=0),
        health_checks=envbool("CONN_HEALTH_CHECKS", True),
        busy_timeout=envint("SQLITE_BUSY_TIMEOUT", 20, minimum=0),
        pool=PoolSize(FORGE_DB_POOL_MIN, FORGE_DB_POOL_MAX, FORGE_DB_POOL_TIMEOUT)
        if FORGE_DB_POOL
        else None,
    )
}
# The test database's name (pytest, manage.py test); empty: Django's "test_" + NAME. Test
# runs that share a database server at once (parallel CI jobs, several checkouts) each
# name their own, or one run's set-up drops the database another is using.
if _test_database := envstr("FORGE_TEST_DATABASE_NAME", ""):
    DATABASES["default"]["TEST"] = {"NAME": _test_database}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}

REDIS_URL = envstr("REDIS_URL", "")
if REDIS_URL:
    # Each web process uses a few connections (one blocking read for its feeds' wake-ups,
    # group joins, the publisher's sends), never one per watcher; the socket timeout must
    # outlast the layer's 5 s blocking read, or an idle listener breaks every 5 s.
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {
                "hosts": [
                    {
                        "address": REDIS_URL,
                        "max_connections": envint("FORGE_REDIS_MAX_CONNECTIONS", 200, minimum=4),
                        "socket_timeout": envint("FORGE_REDIS_SOCKET_TIMEOUT", 30, minimum=6),
                        "socket_connect_timeout": envint(
                            "FORGE_REDIS_CONNECT_TIMEOUT", 5, minimum=1
                        ),
                        "socket_keepalive": True,
                        "health_check_interval": 30,
                        "retry_on_timeout": True,
                    }
                ],
                # Wake-ups a process's listener may have queued before it reads them.
                "capacity": envint("FORGE_REDIS_CHANNEL_CAPACITY", 1000, minimum=10),
                "expiry": 60,
            },
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# Django's cache holds the API's request counts (accounts.throttling): in Redis, shared by
# every process, when there is one; else each process's memory, which counts per process.
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "forge",
            "OPTIONS": {"socket_timeout": 2, "socket_connect_timeout": 2},
        }
    }

# --- HTTPS and browser security -------------------------------------------------------

SECURE_SSL_REDIRECT = envbool("SECURE_SSL_REDIRECT", PRODUCTION)
_proxy_header = envlist("SECURE_PROXY_SSL_HEADER", [])
if _proxy_header and len(_proxy_header) != 2:
    raise ImproperlyConfigured(
        "SECURE_PROXY_SSL_HEADER must be 'HEADER,value', e.g. 'HTTP_X_FORWARDED_PROTO,https'"
    )
SECURE_PROXY_SSL_HEADER = (_proxy_header[0], _proxy_header[1]) if _proxy_header else None
SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", 31_536_000 if PRODUCTION else 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = envbool("SECURE_HSTS_INCLUDE_SUBDOMAINS", PRODUCTION)
SECURE_HSTS_PRELOAD = envbool("SECURE_HSTS_PRELOAD", PRODUCTION)
SESSION_COOKIE_SECURE = envbool("SESSION_COOKIE_SECURE", PRODUCTION)
CSRF_COOKIE_SECURE = envbool("CSRF_COOKIE_SECURE", PRODUCTION)
SESSION_COOKIE_AGE = envint("SESSION_COOKIE_AGE", 60 * 60 * 24 * 14, minimum=60)
X_FRAME_OPTIONS = "DENY"

# Pages load scripts, styles, images and fonts from our own origin only: no inline
# scripts or event handlers (front-end code reads its data from json_script blocks),
# no framing, forms post back to us. connect-src 'self' also covers same-origin ws(s).
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "font-src": [CSP.SELF],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "frame-ancestors": [CSP.NONE],
    "form-action": [CSP.SELF],
}

# Two of django-oauth-toolkit's RFC 9700 warnings are Forge's decisions, not oversights
# (docs/ARCHITECTURE.md, "MCP authorization"): W008, http redirect URIs, because MCP hosts
# on the person's machine return to http on a loopback address (RFC 8252), and Forge
# registers no other http redirect URI (accounts.oauth_registration); W005, no RFC 9207
# "iss" in the authorization response, because the MCP SDK's client compares it as a
# string with the issuer as it normalises it (a trailing slash added), so it would
# refuse every authorization this library answers with "iss".
SILENCED_SYSTEM_CHECKS = [
    "oauth2_provider.W005",
    "oauth2_provider.W008",
    *envlist("SILENCED_SYSTEM_CHECKS", []),
]

# --- Static files, time, logging ------------------------------------------------------

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"
# forge_serve runs uvicorn alone, so the ASGI app serves /static/ itself unless a proxy
# in front does it (then set FORGE_SERVE_STATIC=0 and run collectstatic).
FORGE_SERVE_STATIC = envbool("FORGE_SERVE_STATIC", True)
# The proxies whose X-Forwarded-For and X-Forwarded-Proto uvicorn may believe
# (forge_web.serve); empty: none, the connection's own address is the client's. Login
# throttling counts per client address, so behind a proxy this must name it.
FORGE_FORWARDED_ALLOW_IPS = envlist("FORGE_FORWARDED_ALLOW_IPS", [])

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    # Every MCP call at /mcp makes API requests in-process (forge_web.mcp): httpx and the
    # MCP SDK would log each of them at INFO.
    # django-axes announces itself at INFO on every start, each manage.py command included.
    "loggers": {
        "httpx": {"level": "WARNING"},
        "mcp": {"level": "WARNING"},
        "axes.apps": {"level": "WARNING"},
        # psycopg_pool logs each connection attempt that failed, a line a second or more
        # while the database is away: the outage is logged once (accounts.outages).
        "psycopg.pool": {"level": "ERROR"},
    },
    "root": {
        "handlers": ["console"],
        "level": envchoice(
            "FORGE_LOG_LEVEL", "INFO", ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
        ),
    },
}

# --- Forge ----------------------------------------------------------------------------

FORGE_MAX_PLAN_BYTES = envint("FORGE_MAX_PLAN_BYTES", DEFAULT_LIMITS.max_bytes, minimum=1)
FORGE_MAX_PLAN_STEPS = envint("FORGE_MAX_PLAN_STEPS", DEFAULT_LIMITS.max_steps, minimum=1)
# A plan travels inside a JSON body, where escaping can double it: let Django accept
# such a body so that the plan importer, not Django, refuses an oversized plan by name.
# It is also the most any request body may be: forge_web.body_limit refuses a larger one
# before the server reads it (413 request_too_large), whoever sends it.
DATA_UPLOAD_MAX_MEMORY_SIZE = max(2_621_440, 2 * FORGE_MAX_PLAN_BYTES + 1024 * 1024)

# The tool policy plans are compiled and runs authorised with: a YAML or JSON file of
# forge.tools.Policy's shape; empty means forge.tools.DEFAULT_POLICY (plans.compilation).
FORGE_POLICY = envstr("FORGE_POLICY", "")
# Who must approve what (SPEC section 10): a forge.rules/v1 file (JSON or YAML), checked at
# start-up (forge.E002 names the line and the field); empty means four eyes alone.
FORGE_APPROVAL_RULES = envstr("FORGE_APPROVAL_RULES", "")
# The deployment's toolbox (plans.compilation): hosts http_request may reach, the MCP
# servers' file (the common {"mcpServers": ...} JSON), how often servers are listed again.
FORGE_HTTP_ALLOWED_HOSTS = envhosts("FORGE_HTTP_ALLOWED_HOSTS")
FORGE_MCP_SERVERS = envstr("FORGE_MCP_SERVERS", "")
FORGE_MCP_REFRESH_SECONDS = envint("FORGE_MCP_REFRESH_SECONDS", 60, minimum=0)
# The gateway (SPEC section 11): how long a held call's request waits for a person's
# decision before answering approval_pending, and how long a held call may wait at all.
FORGE_GATEWAY_HOLD_SECONDS = envint("FORGE_GATEWAY_HOLD_SECONDS", 60, minimum=0)
FORGE_GATEWAY_HOLD_TTL = envint("FORGE_GATEWAY_HOLD_TTL", 3600, minimum=1)
# A plan of more steps without milestones draws plan_without_milestones (0: never).
FORGE_MILESTONE_WARN_STEPS = envint("FORGE_MILESTONE_WARN_STEPS", 50, minimum=0)

# Request rates of the API (accounts.throttling), "<requests>/<period>" (s, m, h, d), or
# empty for no limit: every authenticated request per person (token or session); the
# calls that compile a plan or ask the planner per person as well; and the requests
# refused for want of valid credentials (401) per client address.
FORGE_API_RATE = envrate("FORGE_API_RATE", "600/min")
FORGE_API_COMPILE_RATE = envrate("FORGE_API_COMPILE_RATE", "120/min")
FORGE_API_ANON_RATE = envrate("FORGE_API_ANON_RATE", "300/min")

FORGE_API_PAGE_SIZE = envint("FORGE_API_PAGE_SIZE", 50, minimum=1)
NINJA_PAGINATION_CLASS = "forge_web.pagination.PageNumberPagination"  # page <= 10**9
NINJA_PAGINATION_PER_PAGE = FORGE_API_PAGE_SIZE
NINJA_MAX_PER_PAGE_SIZE = FORGE_API_PAGE_SIZE

# --- Audit ------------------------------------------------------------------------------
# The anchor log: the audit chain's signed heads, outside the database (audit.anchors).
# Default: next to an SQLite database file (so that removing db.sqlite3* starts both
# over), else in the repository; production should point it at append-only storage
# that every process shares (docs/security.md).
_sqlite_file = (
    DATABASES["default"]["ENGINE"] in ("django.db.backends.sqlite3", "forge_web.sqlite")
    and str(DATABASES["default"]["NAME"])
    and ":memory:" not in str(DATABASES["default"]["NAME"])
)
FORGE_AUDIT_ANCHOR_PATH = envstr(
    "FORGE_AUDIT_ANCHOR_PATH",
    f"{DATABASES['default']['NAME']}-audit-anchors.jsonl"
    if _sqlite_file
    else str(BASE_DIR / "audit-anchors.jsonl"),
)
# Anchor the chain's head every this many events (and at every full walk), and once the
# oldest event after the newest anchor has waited this many seconds (audit.services):
# events newer than the newest anchor, the ones that can vanish unseen, are fewer than
# FORGE_AUDIT_ANCHOR_EVERY and younger than FORGE_AUDIT_ANCHOR_SECONDS + 1 s.
FORGE_AUDIT_ANCHOR_EVERY = envint("FORGE_AUDIT_ANCHOR_EVERY", 100, minimum=1)
FORGE_AUDIT_ANCHOR_SECONDS = envfloat("FORGE_AUDIT_ANCHOR_SECONDS", 5.0, minimum=0.1)
# The anchors' HMAC key; empty: derived from SECRET_KEY (set it to rotate SECRET_KEY freely).
FORGE_AUDIT_ANCHOR_KEY = envstr("FORGE_AUDIT_ANCHOR_KEY", "")
# Seconds between two full walks asked for over the API or the page (audit.walk_lock).
FORGE_AUDIT_VERIFY_INTERVAL = envint("FORGE_AUDIT_VERIFY_INTERVAL", 60, minimum=0)

# --- Runs -------------------------------------------------------------------------------
# Where each run's workspace directory lives (shell and file tools work inside it).
FORGE_WORKSPACES = envstr("FORGE_WORKSPACES", str(BASE_DIR / "workspaces"))
# How long a worker holds a step without a heartbeat before another may take it over.
FORGE_STEP_LEASE_SECONDS = envint("FORGE_STEP_LEASE_SECONDS", 30, minimum=1)
# How long a worker rides out a database outage (reconnecting with a capped, jittered
# backoff, its steps' results kept until they can be recorded) before it stops with an
# error, for its supervisor (forge_serve, systemd, Kubernetes) to start it again.
FORGE_DB_OUTAGE_SECONDS = envfloat("FORGE_DB_OUTAGE_SECONDS", 120.0, minimum=1.0)
# How many steps one worker process runs at once (threads: runs.slots). Steps mostly wait
# on models, HTTP and subprocesses, so a worker holds several; on PostgreSQL it holds at
# most a connection per slot plus 3 of its own, and refuses to start when the server has
# fewer free (runs.capacity).
FORGE_WORKER_CONCURRENCY = envint("FORGE_WORKER_CONCURRENCY", 8, minimum=1)
# How many times a repeatable step whose worker stopped answering (its lease expired) is
# started again before it fails and the run needs a replan; each retry waits
# FORGE_STEP_LEASE_RETRY_BACKOFF_SECONDS, doubled per retry up to the cap, less up to a
# fifth at random (forge.backoff), before it is queued.
FORGE_STEP_MAX_LEASE_RETRIES = envint("FORGE_STEP_MAX_LEASE_RETRIES", 3, minimum=0)
FORGE_STEP_LEASE_RETRY_BACKOFF_SECONDS = envfloat(
    "FORGE_STEP_LEASE_RETRY_BACKOFF_SECONDS", 1.0, minimum=0.0
)
FORGE_STEP_LEASE_RETRY_BACKOFF_MAX_SECONDS = envfloat(
    "FORGE_STEP_LEASE_RETRY_BACKOFF_MAX_SECONDS", 60.0, minimum=0.0
)
# What an agent step without an estimate reserves from a run's token and cost budgets
# (never more than the budget's whole limit), and so the most it may use
# (forge.runtime.reservations).
FORGE_AGENT_STEP_TOKENS = envint("FORGE_AGENT_STEP_TOKENS", 20_000, minimum=1)
FORGE_AGENT_STEP_COST = envfloat("FORGE_AGENT_STEP_COST", 0.5, minimum=0.0)
# Websocket consumers read new events from the database at this interval even without a
# wake-up, which is what carries events across processes when there is no Redis.
FORGE_WS_POLL_SECONDS = float(envstr("FORGE_WS_POLL_SECONDS", "0.1" if not REDIS_URL else "1.0"))
# How often every open websocket's credential is checked again (accounts.sockets): a
# revoked token, an ended session or a lost role closes its sockets (4403) within this,
# and at once when the change is made in a process the channel layer reaches. Keep it
# under 5 to keep that promise (docs/security.md).
FORGE_WS_ACCESS_CHECK_SECONDS = envfloat("FORGE_WS_ACCESS_CHECK_SECONDS", 2.0, minimum=0.1)
# How many events a websocket watcher may fall behind its run's feed before it is closed
# (4408) to reconnect from its last seq. Frames are shared between watchers, so a queue
# costs a reference per event, not a copy.
FORGE_WS_WATCHER_QUEUE = envint("FORGE_WS_WATCHER_QUEUE", 10_000, minimum=10)
# How shell steps are confined: "bwrap" (bubblewrap; without it they fail with
# sandbox_unavailable) or "rlimits", the explicit opt-in to resource limits only, noted
# on every step and warned about by `manage.py check` (runs.checks).
FORGE_SANDBOX = envchoice("FORGE_SANDBOX", "bwrap", ("bwrap", "rlimits"))
# What one shell step may write to its workspace and temporary directory together.
FORGE_STEP_DISK_BYTES = envint("FORGE_STEP_DISK_BYTES", 1 << 30, minimum=1)
# The model agent steps run with on workers: "openai:MODEL" (FORGE_MODEL_BASE_URL,
# FORGE_MODEL_API_KEY) or "scripted:FILE"; empty: agent steps fail with no_model.
FORGE_MODEL = envstr("FORGE_MODEL", "")
# The planner of "New plan from a goal" (POST /api/v1/plans/generate) and of automatic
# replans (`replan: auto`): "openai:MODEL" at FORGE_PLANNER_BASE_URL (default
# FORGE_MODEL_BASE_URL; key FORGE_MODEL_API_KEY or OPENAI_API_KEY) or
# "scripted:FILE[,FILE...]"; empty: no planner, and the page says how to set one.
FORGE_PLANNER = envstr("FORGE_PLANNER", "")
FORGE_PLANNER_BASE_URL = envstr("FORGE_PLANNER_BASE_URL", "")
FORGE_PLANNER_TIMEOUT_SECONDS = envint("FORGE_PLANNER_TIMEOUT_SECONDS", 120, minimum=1)
# How many answers a planner may give before its plan compiles (each refused one goes back
# to it with its diagnostics); then the person sees the last one and why.
FORGE_PLANNER_ATTEMPTS = envint("FORGE_PLANNER_ATTEMPTS", 3, minimum=1)

# --- Inbox and notifications (reviews.notifications) -------------------------------------
# The site's address as people reach it: e-mails and webhooks link to exact pages with it.
FORGE_BASE_URL = envstr("FORGE_BASE_URL", "http://localhost:8000")
# E-mail: Django's mailers. In development the console backend (messages printed by the
# process that sends them: a worker); in production SMTP (EMAIL_HOST and friends), since
# `check --deploy` refuses a development-only backend. FORGE_EMAIL_BACKEND names another.
_email_backend = envstr(
    "FORGE_EMAIL_BACKEND",
    "django.core.mail.backends.smtp.EmailBackend"
    if PRODUCTION
    else "django.core.mail.backends.console.EmailBackend",
)
_email_options: dict[str, object] = {}
if _email_backend.endswith("smtp.EmailBackend"):
    _email_options = {
        "host": envstr("EMAIL_HOST", "localhost"),
        "port": envint("EMAIL_PORT", 25, minimum=1),
        "username": envstr("EMAIL_HOST_USER", ""),
        "password": envstr("EMAIL_HOST_PASSWORD", ""),
        "use_tls": envbool("EMAIL_USE_TLS", False),
        "use_ssl": envbool("EMAIL_USE_SSL", False),
        "timeout": envint("EMAIL_TIMEOUT", 10, minimum=1),
    }
MAILERS = {"default": {"BACKEND": _email_backend, "OPTIONS": _email_options}}
DEFAULT_FROM_EMAIL = envstr("DEFAULT_FROM_EMAIL", "forge@localhost")
# Webhooks reach only these hosts ("host" for any port, "host:port" for one), checked when
# an admin saves one and at every attempt: an allow list of their own, apart from
# FORGE_HTTP_ALLOWED_HOSTS (what plans' steps may reach is not what the site may call).
# Both lists reach only public addresses unless they list the address itself ("10.0.0.5",
# "10.0.0.5:8080", "[::1]:8080") or its network ("10.0.0.0/8"): forge.netguard.
FORGE_WEBHOOK_ALLOWED_HOSTS = envhosts("FORGE_WEBHOOK_ALLOWED_HOSTS")
# Attempts per delivery (bounded: a delivery ends), the first retry's delay, doubling
# after each failure up to the cap, each less up to a fifth at random (forge.backoff).
FORGE_WEBHOOK_ATTEMPTS = envint("FORGE_WEBHOOK_ATTEMPTS", 6, minimum=1, maximum=100)
FORGE_WEBHOOK_BACKOFF_SECONDS = envint("FORGE_WEBHOOK_BACKOFF_SECONDS", 30, minimum=1)
FORGE_WEBHOOK_BACKOFF_MAX_SECONDS = envint("FORGE_WEBHOOK_BACKOFF_MAX_SECONDS", 3600, minimum=1)
# How often an open page's inbox count is read again without a wake-up (other processes).
FORGE_INBOX_POLL_SECONDS = float(envstr("FORGE_INBOX_POLL_SECONDS", "5"))
