"""The WSGI application (gunicorn, ``make web``). The embedded servers start here when
DATABASE_URL / REDIS_URL are unset: settings only name them."""

import gc
import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

from bulkhead import embedded_services

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bulkhead.settings")
embedded_services.ensure_started()
application = get_wsgi_application()

# Load every view now (the URLconf imports them), then move everything loaded so far out of the
# garbage collector's sight (gc.freeze): those objects live as long as the process, and a full
# collection walked all of them -- every few requests a page of 1,000 sections waited 90-300 ms for
# it (docs/benchmarks.md, "Console pages"). Reference counting still frees them as usual.
get_resolver().url_patterns  # noqa: B018 (the import is the point)
gc.freeze()
