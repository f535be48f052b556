"""The WSGI application (gunicorn, ``make web``). The embedded servers start here when
DATABASE_URL / REDIS_URL are unset: settings only name them."""

import os

from django.core.wsgi import get_wsgi_application

from bulkhead import embedded_services

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bulkhead.settings")
embedded_services.ensure_started()
application = get_wsgi_application()
