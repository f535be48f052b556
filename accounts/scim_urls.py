"""``/scim/v2/``: the SCIM 2.0 endpoints (accounts/scim_views.py)."""

from django.urls import path, re_path

from accounts import scim_views as views

app_name = "scim"

urlpatterns = [
    path("ServiceProviderConfig", views.service_provider_config, name="service-provider-config"),
    path("Schemas", views.schemas, name="schemas"),
    path("Schemas/<str:schema_id>", views.schemas, name="schema"),
    path("ResourceTypes", views.resource_types, name="resource-types"),
    path("ResourceTypes/<str:type_id>", views.resource_types, name="resource-type"),
    path("Users", views.users, name="users"),
    path("Users/.search", views.users, name="users-search"),
    path("Users/<str:user_id>", views.user, name="user"),
    path("Groups", views.groups, name="groups"),
    path("Groups/.search", views.groups, name="groups-search"),
    path("Groups/<str:group_id>", views.group, name="group"),
    path(".search", views.search_everything, name="search"),
    re_path(r"^(?P<rest>.*)$", views.not_found, name="not-found"),
]
