"""The console's pages, mounted at ``/``."""

from django.urls import path

from console.views import (
    audit,
    auth,
    dashboard,
    documents,
    identity,
    jobs,
    members,
    people,
    review,
    search,
    sso,
    upload,
)
from console.views import document_page as document
from console.views import effective_access as access
from console.views import index_versions as versions
from console.views import sources as source_pages

app_name = "console"

urlpatterns = [
    path("", dashboard.dashboard, name="dashboard"),
    path("sign-in/", auth.SignInView.as_view(), name="sign-in"),
    path("sign-out/", auth.SignOutView.as_view(), name="sign-out"),
    path("tenant/", auth.tenant_switch, name="tenant-switch"),
    path("password/", auth.password_change, name="password-change"),
    # People: invitations and password reset (issue 28)
    path("password/forgot/", people.password_forgot, name="password-forgot"),
    path("password/reset/done/", people.PasswordResetComplete.as_view(), name="password-reset-complete"),
    path("password/reset/<str:link>/", people.password_reset_link, name="password-reset-confirm"),
    path("invitation/accept/", people.invitation_accept_view, name="invitation-accept"),
    path("invitation/<str:key>/", people.invitation_link, name="invitation"),
    path("members/invite/", people.invitation_create_view, name="invitation-create"),
    path("invitations/<int:invitation_id>/revoke/", people.invitation_revoke_view, name="invitation-revoke"),
    path("sso/", sso.sso_choose, name="sso-choose"),
    path("sso/<slug:slug>/", sso.sso_start, name="sso-start"),
    path("sso/<slug:slug>/callback/", sso.sso_callback, name="sso-callback"),
    path("settings/sso/", sso.sso_settings, name="sso-settings"),
    path("settings/scim/", identity.scim_tokens, name="scim-tokens"),
    path("settings/scim/<int:token_id>/revoke/", identity.scim_token_revoke, name="scim-token-revoke"),
    path("documents/", documents.document_index, name="documents"),
    path("documents/bulk/", documents.document_bulk, name="documents-bulk"),
    path("documents/upload/", upload.document_upload, name="document-upload"),
    path("documents/<uuid:document_id>/", document.document_detail, name="document"),
    path("documents/<uuid:document_id>/replace/", document.document_replace_view, name="document-replace"),
    path("documents/<uuid:document_id>/delete/", document.document_delete_view, name="document-delete"),
    path("documents/<uuid:document_id>/as/", access.document_as_member_view, name="document-as-member"),
    path("sections/<uuid:section_id>/access/", document.section_access, name="section-access"),
    path("sections/<uuid:section_id>/readers/", access.section_readers_view, name="section-readers"),
    path("jobs/", jobs.job_index, name="jobs"),
    path("jobs/<uuid:job_id>/", jobs.job_detail, name="job"),
    path("jobs/<uuid:job_id>/card/", jobs.job_card, name="job-card"),
    path("jobs/<uuid:job_id>/retry/", jobs.job_retry_view, name="job-retry"),
    path("search/", search.playground, name="search"),
    path("members/", members.member_index, name="members"),
    path("members/<int:membership_id>/", members.member_change, name="member-change"),
    path("members/<int:membership_id>/active/", members.member_active, name="member-active"),
    path("groups/", members.group_index, name="groups"),
    path("groups/<int:group_id>/", members.group_rename, name="group-rename"),
    path("tokens/", members.token_index, name="tokens"),
    path("tokens/<int:token_id>/revoke/", members.token_revoke, name="token-revoke"),
    path("versions/", versions.version_index, name="index-versions"),
    path("versions/<str:ref>/", versions.version_detail, name="index-version"),
    path("versions/<str:ref>/build/", versions.version_build, name="index-version-build"),
    path("versions/<str:ref>/progress/", versions.version_progress, name="index-version-progress"),
    path("versions/<str:ref>/evaluate/", versions.version_evaluate, name="index-version-evaluate"),
    path("versions/<str:ref>/activate/", versions.version_activate, name="index-version-activate"),
    path("sources/", source_pages.source_index, name="sources"),
    path("sources/<int:source_id>/", source_pages.source_detail, name="source"),
    path("sources/<int:source_id>/sync/", source_pages.source_sync, name="source-sync"),
    path("sources/<int:source_id>/progress/", source_pages.source_progress, name="source-progress"),
    path("audit/", audit.audit_index, name="audit"),
    path("audit/settings/", audit.audit_settings, name="audit-settings"),
    path("review/", review.review_index, name="review"),
    path("review/settings/", review.review_settings, name="review-settings"),
    path("review/<uuid:chunk_id>/", review.review_decide_view, name="review-decide"),
    path("review/heads/<uuid:section_id>/", review.review_head_decide_view, name="review-head-decide"),
]
