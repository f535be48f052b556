from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin
from django.core.exceptions import PermissionDenied
from django.db import router, transaction
from django.http import HttpResponseRedirect
from django.urls import reverse

from accounts.models import ApiToken, Group, GroupMembership, Membership, Tenant, User
from accounts.services import api_tokens_revoke, user_active_set


class ReadOnlyAdmin(admin.ModelAdmin):
    """Shown, never added, changed or deleted here (a subclass may allow deleting); ``read_only_message`` says, on
    the list and on each row's page, how the rows do change (the services, which record each change); none when empty."""

    read_only_message = ""

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    def changelist_view(self, request, extra_context=None):
        if request.method == "GET" and self.read_only_message:
            self.message_user(request, self.read_only_message, messages.INFO)
        return super().changelist_view(request, extra_context)

    def change_view(self, request, object_id, form_url="", extra_context=None):
        if request.method == "GET" and self.read_only_message:
            self.message_user(request, self.read_only_message, messages.INFO)
        return super().change_view(request, object_id, form_url, extra_context)

# A tenant's slug names its source folders (``sources.listing.tenant_folders``) and every slug given up is recorded by
# the database (``accounts/0009``): the tenant is made and looked after with ``manage.py kb_tenant``. The admin shows it.
TENANT_READ_ONLY = (
    "Tenants are read-only here: an operator creates one with `manage.py kb_tenant create SLUG --name NAME`, lists "
    "them with `kb_tenant list`, mints a tenant's SCIM token with `kb_tenant scim-token SLUG`, and, once the folders a "
    "deleted or renamed tenant left under its slug are moved away, lets the tenant now holding that slug read its "
    "folders with `kb_tenant release-folder SLUG`. A tenant is not renamed or deleted here: its slug names its source "
    "folders, and a deletion takes its documents, members and audit trail with it."
)


@admin.register(Tenant)
class TenantAdmin(ReadOnlyAdmin):
    """Shown, never added, changed or deleted here (found attacking identity, 2026-12-04, the thirteenth session's
    third follow-up): the change form saved a new slug -- which names the tenant's source folders: its sources,
    below the old slug's folder, stopped syncing, and a tenant given the old slug later is refused its folders until
    an operator releases it -- and a new name straight to the row, and a deletion removed the tenant with everything
    it held; nothing recorded either where an operator or a tenant reads (the database's retired-slug record
    aside). ``manage.py kb_tenant`` creates tenants (``accounts.services.tenant_create``)."""

    read_only_message = TENANT_READ_ONLY
    list_display = ("slug", "name", "created_at")
    search_fields = ("slug", "name")


# An account's password and active flag reach every tenant it belongs to: the admin writes neither straight to the row.
USER_PASSWORD_AND_ACTIVE = (
    "A password is not set here: the person resets it from the sign-in page (\u201cForgot password?\u201d), or an "
    "operator runs `manage.py kb_user set-password EMAIL` on the server. Turning \u201cActive\u201d off here "
    "deactivates the account in every tenant it belongs to: the API tokens of its memberships and the tokens they "
    "minted are revoked, and each tenant's audit trail records it (turned on again, the account needs new tokens). "
    "Deleting an account or a membership here is recorded in each tenant's trail too. An account's address, and "
    "its staff and superuser flags, are not changed here: a tenant's identity provider moves a membership to a new "
    "address over SCIM (which unlinks its single sign-on and revokes the old person's tokens), or a tenant admin "
    "removes the member and invites the new address; an operator makes a staff account with `manage.py "
    "createsuperuser` and changes the flags in `manage.py shell`."
)
# An account deleted between the change page's read of it and the save's lock of it (another operator, a SCIM
# deprovisioning, ``kb_user``): nothing is saved, and the page says why.
ACCOUNT_DELETED = (
    "This account was deleted while its page was open (by another operator, its tenant's identity provider over "
    "SCIM, or on the server): nothing was saved."
)
USER_ADD_REFUSED = (
    "Accounts are not added here: an operator adds a person to a tenant with `manage.py kb_user create EMAIL "
    "--tenant T --role R --clearance L` (recorded in the tenant's audit trail), a tenant admin invites them from the "
    "console's Members page (or `POST /api/v1/memberships/`), and a staff account is made with `manage.py "
    "createsuperuser`."
)


class AccountDeleted(Exception):
    """The account a change page saves was deleted since the page read it (:data:`ACCOUNT_DELETED`)."""


@admin.register(User)
class UserAdmin(BaseUserAdmin):
    """An account's change page: its password is never set here (no password field, the password page refused),
    and "Active" changes through ``accounts.services.user_active_set`` (recorded in each tenant, tokens revoked
    on a deactivation). Found attacking identity, 2026-12-04: both were written straight to the row -- no tenant's
    trail heard of a deactivation, and its tokens worked again once the account was turned back on; the password
    page saved the whole user it had read.

    The address and the staff and superuser flags are read-only, and no account is added here (found attacking
    identity, 2026-12-04, the second follow-up): a new address kept the account's single sign-on links and API
    tokens -- SCIM's move, ``accounts.services.membership_identity_reset``, ends both -- with no record in any
    tenant; the flags open this admin, across every tenant; and the add form made an account with a password, no
    tenant, and nothing recorded."""

    ordering = ("email",)
    list_display = ("email", "is_staff", "is_active", "date_joined")
    search_fields = ("email",)
    fieldsets = (
        (None, {"fields": ("email",)}),
        ("Permissions", {"fields": ("is_active", "is_staff", "is_superuser")}),
        ("Dates", {"fields": ("last_login", "date_joined")}),
    )
    readonly_fields = ("email", "is_staff", "is_superuser")

    def has_add_permission(self, request) -> bool:
        return False

    def add_view(self, request, form_url="", extra_context=None):
        self.message_user(request, USER_ADD_REFUSED, messages.ERROR)
        return HttpResponseRedirect(reverse("admin:accounts_user_changelist"))

    def changelist_view(self, request, extra_context=None):
        if request.method == "GET":
            self.message_user(request, USER_ADD_REFUSED, messages.INFO)
        return super().changelist_view(request, extra_context)

    def save_model(self, request, obj, form, change):
        """Only the fields the form changed are written, under the account's row lock (the view's transaction
        holds it), and "Active" through the service. Found attacking identity, 2026-12-04 (the thirteenth session's
        third follow-up): the whole row the page had read was saved, so a deactivation or a new password committed
        between the form's read and its save -- ``kb_user set-password``, a reset link, the console, another
        operator -- was written back over: the account active again, the old password restored."""
        if not change:  # no account is added here (``has_add_permission``)
            raise PermissionDenied
        using = router.db_for_write(User)
        fields = [name for name in form.changed_data
                  if name != "is_active" and name in {f.name for f in User._meta.concrete_fields}]
        with transaction.atomic(using=using):
            if User.objects.using(using).select_for_update().filter(pk=obj.pk).first() is None:
                # Deleted since the page's read (found in the fourteenth session: the fields it changed were saved to
                # no row, a 500). Raised out of the view's transaction, which is undone.
                raise AccountDeleted
            if fields:
                obj.save(using=using, update_fields=fields)
        if "is_active" not in form.changed_data:
            return
        revoked = user_active_set(user=obj, is_active=obj.is_active)
        if revoked:
            self.message_user(request, f"{len(revoked)} token{'' if len(revoked) == 1 else 's'} revoked.",
                              messages.SUCCESS)

    def user_change_password(self, request, id, form_url=""):
        self.message_user(request, USER_PASSWORD_AND_ACTIVE, messages.ERROR)
        return HttpResponseRedirect(reverse("admin:accounts_user_change", args=[id]))

    def change_view(self, request, object_id, form_url="", extra_context=None):
        if request.method == "GET":
            self.message_user(request, USER_PASSWORD_AND_ACTIVE, messages.INFO)
        try:
            return super().change_view(request, object_id, form_url, extra_context)
        except AccountDeleted:  # the view's transaction is undone: nothing of the save stays, no "changed" entry
            self.message_user(request, ACCOUNT_DELETED, messages.WARNING)
            return HttpResponseRedirect(reverse("admin:accounts_user_changelist"))


# A membership's rights change only through accounts.services, which record the change in the tenant's trail and
# revoke what must end with it (tokens on a deactivation or a demotion, the last admin kept): the admin shows them.
MEMBERSHIP_READ_ONLY = (
    "Memberships are read-only here: their role, clearance, groups and active flag change through the console's "
    "Members page (or PATCH /api/v1/memberships/ID/), as a tenant admin, which records the change in the tenant's "
    "audit trail and revokes the tokens a deactivation or demotion ends. An operator adds a member with "
    "`manage.py kb_user create`. Deleting a membership here revokes the tokens it minted first."
)


class GroupMembershipInline(admin.TabularInline):
    model = GroupMembership
    extra = 0

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Membership)
class MembershipAdmin(ReadOnlyAdmin):
    """Shown, and deletable (``accounts.signals`` revokes what a deleted membership minted), never added or
    changed here: a save here would bypass ``accounts.services.membership_update`` -- no audit record, no token
    revoked on a deactivation or demotion (found attacking identity, 2026-12-04)."""

    read_only_message = MEMBERSHIP_READ_ONLY
    list_display = ("user", "tenant", "role", "clearance", "is_active")
    list_filter = ("tenant", "role", "clearance")
    inlines = [GroupMembershipInline]

    def has_delete_permission(self, request, obj=None) -> bool:  # deletable: accounts.signals records it
        return admin.ModelAdmin.has_delete_permission(self, request, obj)


# A group's slug is what documents' access markers name, its id what chunks' policies hold, and its members decide who
# reads what: it is made and renamed through ``accounts.services`` (recorded in the tenant's trail). The admin shows it.
GROUP_READ_ONLY = (
    "Groups are read-only here: a tenant admin creates and renames them on the console's Groups page (or `POST "
    "/api/v1/groups/` and `PATCH /api/v1/groups/ID/`), and puts members in them on the Members page, each recorded in "
    "the tenant's audit trail; an operator creates one with `manage.py kb_group create SLUG --tenant T`. A group its "
    "tenant's identity provider made changes over SCIM."
)


@admin.register(Group)
class GroupAdmin(ReadOnlyAdmin):
    """Shown, never added, changed or deleted here (found attacking identity, 2026-12-04, the thirteenth session's
    second follow-up): a save wrote the slug -- which documents' access markers name: a new slug left every marker
    naming the old one unknown, and another tenant's move was a form field away -- and the name straight to the row,
    an add made a group and a deletion removed one with its members, none of it in the tenant's trail. The services
    (``accounts.services.group_create``, ``group_update``) record the console's, the API's and ``kb_group``'s."""

    read_only_message = GROUP_READ_ONLY
    list_display = ("slug", "tenant", "name", "source")
    list_filter = ("tenant",)


# A token's revocation, its minter and its member are what decide whether its key works (``accounts.services``):
# each change there is recorded in the tenant's trail. The admin shows tokens and revokes them through the service.
TOKEN_READ_ONLY = (
    "API tokens are read-only here: a tenant admin mints and revokes them on the console's Members > API tokens "
    "page (or `POST /api/v1/tokens/` and `POST /api/v1/tokens/ID/revoke/`), and an operator mints one with `manage.py kb_user create`. "
    "\u201cRevoke the selected tokens\u201d below revokes them here, each recorded in its tenant's audit trail. "
    "SCIM tokens are on Members > SCIM and `manage.py kb_tenant scim-token`."
)
OPERATOR_REVOKED = "an operator revoked it on the server"


@admin.register(ApiToken)
class ApiTokenAdmin(ReadOnlyAdmin):
    """Shown, and revoked through ``accounts.services.api_token_revoke`` (recorded), never added, changed or
    deleted here: a save set ``revoked_at`` back to empty (the key worked again), ``created_by`` to none (read as
    minted on the server, which always works) or ``membership`` to another member, with nothing in the trail; a
    deletion ended a token with no record of it (found attacking identity, 2026-12-04). SCIM tokens are not
    registered here at all."""

    read_only_message = TOKEN_READ_ONLY
    list_display = ("prefix", "membership", "name", "created_by", "created_at", "last_used_at", "revoked_at")
    list_filter = ("membership__tenant",)
    actions = ["revoke_selected"]

    @admin.action(description="Revoke the selected tokens (recorded in each tenant's audit trail)")
    def revoke_selected(self, request, queryset):
        revoked = api_tokens_revoke(tokens=queryset, reason=OPERATOR_REVOKED)
        self.message_user(request, f"{revoked} token{'' if revoked == 1 else 's'} revoked.", messages.SUCCESS)
