from django.contrib import admin
from django.urls import include, path

from bulkhead import health
from kb.mcp_http import McpApi
from pipeline.apis import DocumentPreviewApi

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("livez", health.livez, name="livez"),
    path("admin/", admin.site.urls),
    # The preview is the pipeline's (kb's URLs cannot name it); before kb's, whose documents/<id>/ would take it.
    path("api/v1/documents/preview/", DocumentPreviewApi.as_view(), name="document-preview"),
    path("api/v1/sources/", include("sources.api_urls")),  # sources that stay in sync (issue 29)
    path("api/", include("kb.api_urls")),
    # The MCP server over Streamable HTTP (issue 26; kb/mcp_http.py), with and without the slash: clients are given "/mcp".
    path("mcp", McpApi.as_view(), name="mcp"),
    path("mcp/", McpApi.as_view()),
    path("scim/v2/", include("accounts.scim_urls")),  # SCIM 2.0 provisioning (issue 28)
    path("", include("console.urls")),
]

# Unknown URLs under /api/ answer the API's JSON error shape too.
handler404 = "kb.errors.not_found_view"
handler500 = "kb.errors.server_error_view"
