from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin

from accounts.models import ApiToken, Group, GroupMembership, Membership, Tenant, User


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "created_at")
    search_fields = ("slug", "name")


@admin.register(User)
class UserAdmin(BaseUserAdmin):
    ordering = ("email",)
    list_display = ("email", "is_staff", "is_active", "date_joined")
    search_fields = ("email",)
    fieldsets = (
        (None, {"fields": ("email", "password")}),
        ("Permissions", {"fields": ("is_active", "is_staff", "is_superuser")}),
        ("Dates", {"fields": ("last_login", "date_joined")}),
    )
    add_fieldsets = ((None, {"classes": ("wide",), "fields": ("email", "password1", "password2")}),)


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
class MembershipAdmin(admin.ModelAdmin):
    """Shown, and deletable (``accounts.signals`` revokes what a deleted membership minted), never added or
    changed here: a save here would bypass ``accounts.services.membership_update`` -- no audit record, no token
    revoked on a deactivation or demotion (found attacking identity, 2026-12-04)."""

    list_display = ("user", "tenant", "role", "clearance", "is_active")
    list_filter = ("tenant", "role", "clearance")
    inlines = [GroupMembershipInline]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def changelist_view(self, request, extra_context=None):
        if request.method == "GET":
            self.message_user(request, MEMBERSHIP_READ_ONLY, messages.INFO)
        return super().changelist_view(request, extra_context)

    def change_view(self, request, object_id, form_url="", extra_context=None):
        if request.method == "GET":
            self.message_user(request, MEMBERSHIP_READ_ONLY, messages.INFO)
        return super().change_view(request, object_id, form_url, extra_context)


@admin.register(Group)
class GroupAdmin(admin.ModelAdmin):
    list_display = ("slug", "tenant", "name")
    list_filter = ("tenant",)


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("prefix", "membership", "name", "created_at", "last_used_at", "revoked_at")
    readonly_fields = ("prefix", "key_hash", "created_at", "last_used_at")
    list_filter = ("membership__tenant",)
