"""Settings of the test OpenID provider (see the package's docstring)."""

import os
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent
SECRET_KEY = "test-oidc-provider-only"
DEBUG = True
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
INSTALLED_APPS = ["django.contrib.auth", "django.contrib.contenttypes", "django.contrib.sessions",
                  "oauth2_provider"]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]
ROOT_URLCONF = "tests.oidc_provider.urls"
TEMPLATES = [{"BACKEND": "django.template.backends.django.DjangoTemplates", "DIRS": [BASE_DIR / "templates"],
              "APP_DIRS": True, "OPTIONS": {"context_processors": ["django.template.context_processors.request"]}}]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": os.environ.get("OIDC_PROVIDER_DB", ":memory:")}}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
LOGIN_URL = "/accounts/login/"
# A distinct cookie name: the relying party's own session cookie never meets this one.
SESSION_COOKIE_NAME = "provider_session"
CSRF_COOKIE_NAME = "provider_csrf"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
OAUTH2_PROVIDER = {
    "OIDC_ENABLED": True,
    "OIDC_RSA_PRIVATE_KEY": Path(os.environ["OIDC_PROVIDER_KEY"]).read_text() if os.environ.get("OIDC_PROVIDER_KEY")
    else "",
    "PKCE_REQUIRED": True,
    "OIDC_ISS_ENDPOINT": os.environ.get("OIDC_PROVIDER_ISSUER", ""),  # one issuer, whatever name it is reached by
    "SCOPES": {"openid": "OpenID Connect", "email": "e-mail", "profile": "profile"},
    "OAUTH2_VALIDATOR_CLASS": "tests.oidc_provider.validator.Validator",
}
