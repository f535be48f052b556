"""``/api/v1/sources/`` routes (mounted by ``bulkhead/urls.py``)."""

from django.urls import path

from sources import apis

urlpatterns = [
    path("", apis.SourceListApi.as_view(), name="source-list"),
    path("preview/", apis.SourcePreviewApi.as_view(), name="source-preview"),
    path("<str:source_id>/", apis.SourceDetailApi.as_view(), name="source-detail"),
    path("<str:source_id>/sync/", apis.SourceSyncApi.as_view(), name="source-sync"),
    path("<str:source_id>/syncs/", apis.SourceSyncListApi.as_view(), name="source-sync-list"),
    path("<str:source_id>/syncs/<str:sync_id>/", apis.SourceSyncDetailApi.as_view(), name="source-sync-detail"),
    path("<str:source_id>/preview/", apis.SourcePreviewSavedApi.as_view(), name="source-preview-saved"),
    path("<str:source_id>/documents/<str:document_id>/detach/", apis.SourceDocumentDetachApi.as_view(),
         name="source-document-detach"),
    path("<str:source_id>/detached/", apis.SourceDetachedListApi.as_view(), name="source-detached-list"),
    path("<str:source_id>/detached/<str:detached_id>/reattach/", apis.SourceDetachedReattachApi.as_view(),
         name="source-detached-reattach"),
]
