from django.contrib import admin
from django.urls import path

from kb import health

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("admin/", admin.site.urls),
]
