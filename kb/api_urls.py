"""``/api/v1/`` routes, the OpenAPI schema and its docs. Ids are taken as strings so that a
malformed id answers the API's own 404 (same body as a missing one), not Django's HTML page."""

from django.urls import include, path
from drf_spectacular.views import SpectacularRedocView, SpectacularSwaggerView

from accounts import apis as accounts_apis
from audit import apis as audit_apis
from kb import apis, index_version_apis
from kb.schema import SchemaApi

v1 = [
    path("documents/", apis.DocumentListApi.as_view(), name="document-list"),
    path("documents/<str:document_id>/", apis.DocumentDetailApi.as_view(), name="document-detail"),
    path("documents/<str:document_id>/sections/", apis.DocumentSectionsApi.as_view(), name="document-sections"),
    path(
        "documents/<str:document_id>/as/<str:membership_id>/", apis.DocumentAsMemberApi.as_view(),
        name="document-as-member",
    ),
    path("sections/<str:section_id>/", apis.SectionAccessApi.as_view(), name="section-detail"),
    path("sections/<str:section_id>/readers/", apis.SectionReadersApi.as_view(), name="section-readers"),
    path("jobs/<str:job_id>/", apis.JobDetailApi.as_view(), name="job-detail"),
    path("search/", apis.SearchApi.as_view(), name="search"),
    path("review/", apis.ReviewQueueApi.as_view(), name="review-list"),
    path("review/<str:chunk_id>/", apis.ReviewItemApi.as_view(), name="review-detail"),
    path("review/heads/<str:section_id>/", apis.ReviewHeadApi.as_view(), name="review-head-detail"),
    path("settings/screening/", apis.ScreeningSettingsApi.as_view(), name="screening-settings"),
    path("index-versions/", index_version_apis.IndexVersionListApi.as_view(), name="index-version-list"),
    path(
        "index-versions/<str:version_id>/build/", index_version_apis.IndexVersionBuildApi.as_view(),
        name="index-version-build",
    ),
    path(
        "index-versions/<str:version_id>/activate/", index_version_apis.IndexVersionActivateApi.as_view(),
        name="index-version-activate",
    ),
    path("groups/", accounts_apis.GroupListApi.as_view(), name="group-list"),
    path("groups/<str:group_id>/", accounts_apis.GroupDetailApi.as_view(), name="group-detail"),
    path("memberships/", accounts_apis.MembershipListApi.as_view(), name="membership-list"),
    path("memberships/<str:membership_id>/", accounts_apis.MembershipDetailApi.as_view(), name="membership-detail"),
    path("tokens/", accounts_apis.TokenListApi.as_view(), name="token-list"),
    path("tokens/<str:token_id>/revoke/", accounts_apis.TokenRevokeApi.as_view(), name="token-revoke"),
    path("audit/", audit_apis.AuditListApi.as_view(), name="audit-list"),
    path("audit/export/", audit_apis.AuditExportApi.as_view(), name="audit-export"),
    path("audit/settings/", audit_apis.AuditSettingsApi.as_view(), name="audit-settings"),
]

urlpatterns = [
    path("v1/", include(v1)),
    path("schema/", SchemaApi.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="swagger-ui"),
    path("redoc/", SpectacularRedocView.as_view(url_name="schema"), name="redoc"),
]
