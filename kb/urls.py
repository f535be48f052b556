from django.contrib import admin
from django.urls import include, path

from kb import health

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("api/", include("kb.api_urls")),
]

# Unknown URLs under /api/ answer the API's JSON error shape too.
handler404 = "kb.errors.not_found_view"
handler500 = "kb.errors.server_error_view"
