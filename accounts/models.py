"""Tenants, users, memberships, groups and API tokens."""

from __future__ import annotations

from django.contrib.auth.models import AbstractUser, BaseUserManager
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models.functions import Now

from accounts.policy import LEVEL_CHOICES, MAX_LEVEL, AccessLevel


class Tenant(models.Model):
    slug = models.SlugField(max_length=63, unique=True)
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.slug


class UserManager(BaseUserManager):
    use_in_migrations = True

    def create_user(self, email: str, password: str | None = None, **extra):
        if not email:
            raise ValueError("a user needs an email address")
        user = self.model(email=self.normalize_email(email).lower(), **extra)
        user.set_password(password)
        user.save(using=self._db)
        return user

    def create_superuser(self, email: str, password: str | None = None, **extra):
        extra.setdefault("is_staff", True)
        extra.setdefault("is_superuser", True)
        return self.create_user(email, password, **extra)


class RetiredTenantSlug(models.Model):
    """A slug a tenant held and gave up -- deleted, or renamed away -- with that tenant's id. Written by the
    database alone (a trigger on ``accounts_tenant``: whatever deletes or renames a tenant, the Django admin, a
    script, raw SQL) and read only through ``bulkhead_tenant_slug_inherited`` (``accounts/migrations/0009``); the
    application's login has no right on the table. A tenant's source folders are named by its slug
    (``sources.listing.tenant_folders``), so a tenant that takes a slug later would read what was left there for
    the one before: its folders are refused until the operator, having moved them away, releases the slug
    (``manage.py kb_tenant release-folder SLUG``)."""

    slug = models.CharField(max_length=63, db_index=True)
    tenant_id = models.BigIntegerField()
    retired_at = models.DateTimeField(db_default=Now())

    def __str__(self) -> str:
        return f"{self.slug} (tenant {self.tenant_id})"


class User(AbstractUser):
    """A person; identified by email. Their rights come from memberships, one per tenant."""

    username = None
    email = models.EmailField(unique=True)

    USERNAME_FIELD = "email"
    REQUIRED_FIELDS: list[str] = []
    objects = UserManager()

    def __str__(self) -> str:
        return self.email


class Role(models.TextChoices):
    VIEWER = "viewer"
    EDITOR = "editor"
    ADMIN = "admin"


ROLE_RANK = {Role.VIEWER: 0, Role.EDITOR: 1, Role.ADMIN: 2}


class Group(models.Model):
    """A tenant-scoped group, e.g. ``security-team``; sections may be limited to groups."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="groups")
    slug = models.SlugField(max_length=63)
    name = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # manual, or scim (created by the tenant's identity provider); externalId as the provider sent it.
    source = models.CharField(max_length=16, default="manual")
    scim_external_id = models.CharField(max_length=255, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "slug"], name="group_unique_slug_per_tenant")]

    def __str__(self) -> str:
        return f"{self.tenant.slug}/{self.slug}"


class MemberSource(models.TextChoices):
    """Where a membership came from (the console's members list shows it)."""

    MANUAL = "manual", "Manual"  # an admin added it (console, API, `kb_user create`)
    INVITED = "invited", "Invited"  # the person accepted an e-mailed invitation
    SSO = "sso", "Single sign-on"  # created at a first single sign-on (just in time)
    SCIM = "scim", "SCIM"  # provisioned by the tenant's identity provider over SCIM


class Membership(models.Model):
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="memberships")
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.VIEWER)
    clearance = models.PositiveSmallIntegerField(choices=LEVEL_CHOICES, default=AccessLevel.INTERNAL)
    groups = models.ManyToManyField(Group, through="GroupMembership", related_name="memberships", blank=True)
    is_active = models.BooleanField(default=True)
    source = models.CharField(max_length=16, choices=MemberSource.choices, default=MemberSource.MANUAL)
    # What a SCIM client sent for this membership (userName, externalId, name, displayName, emails): the
    # tenant's own view of the person. Never copied onto the user, whom other tenants share.
    scim_profile = models.JSONField(default=dict, blank=True)
    # Whether the person agreed to this membership: they accepted an invitation, or it is the membership
    # their account was made for (a new address), or an operator made it on the server. One that a
    # tenant's identity provider made for an account that already belongs to another tenant (SCIM, a first
    # single sign-on) is not: it works only in a single sign-on session of its tenant, is not offered at a
    # password sign-in and receives none of the account's failed sign-ins or password resets
    # (docs/security.md, "People"). False by default: a new way in must decide.
    consented = models.BooleanField(default=False)
    updated_at = models.DateTimeField(auto_now=True, null=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "tenant"], name="membership_unique_user_tenant"),
            models.CheckConstraint(condition=models.Q(clearance__lte=MAX_LEVEL), name="membership_clearance_known"),
        ]

    def __str__(self) -> str:
        return f"{self.user.email}@{self.tenant.slug} ({self.role}, {AccessLevel(self.clearance).label})"


class GroupMembership(models.Model):
    """A membership's place in a group. The migration adds a trigger keeping both in one tenant."""

    membership = models.ForeignKey(Membership, on_delete=models.CASCADE)
    group = models.ForeignKey(Group, on_delete=models.CASCADE)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["membership", "group"], name="groupmembership_unique")]


class ApiToken(models.Model):
    """A membership's API key. Only a short prefix is kept in clear; the key itself is hashed."""

    membership = models.ForeignKey(Membership, on_delete=models.CASCADE, related_name="tokens")
    name = models.CharField(max_length=100, blank=True)
    prefix = models.CharField(max_length=12, db_index=True)
    key_hash = models.CharField(max_length=64, unique=True)
    # The admin who minted it (and saw its key); None: minted on the server (kb_user, kb_demo). A token
    # works only while its minter may still mint (accounts.services.api_token_authenticate).
    created_by = models.ForeignKey(Membership, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.membership})"


class Invitation(models.Model):
    """An e-mailed invitation to join a tenant with a role, a clearance and groups.

    Only the hash of the link's key is kept; the key is in the e-mail alone. Pending while
    neither accepted nor revoked nor past ``expires_at``; accepting it once ends it."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="invitations")
    email = models.EmailField()
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.VIEWER)
    clearance = models.PositiveSmallIntegerField(choices=LEVEL_CHOICES, default=AccessLevel.INTERNAL)
    group_ids = ArrayField(models.BigIntegerField(), default=list, blank=True)
    key_hash = models.CharField(max_length=64, unique=True)
    invited_by = models.ForeignKey(Membership, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    membership = models.ForeignKey(Membership, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        constraints = [
            models.CheckConstraint(condition=models.Q(clearance__lte=MAX_LEVEL), name="invitation_clearance_known"),
        ]

    def __str__(self) -> str:
        return f"invitation of {self.email} to {self.tenant_id}"


class ScimToken(models.Model):
    """A tenant's SCIM bearer token: what its identity provider provisions with. Its reach is its tenant."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="scim_tokens")
    name = models.CharField(max_length=100, blank=True)
    prefix = models.CharField(max_length=12, db_index=True)
    key_hash = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(Membership, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"scim {self.prefix}… ({self.tenant_id})"


class SsoConfig(models.Model):
    """A tenant's single sign-on with an OpenID provider, and how its claims map to a membership
    (``accounts.sso``). No mapping admits no one; no clearance mapping gives the lowest clearance."""

    tenant = models.OneToOneField(Tenant, on_delete=models.CASCADE, related_name="sso_config")
    enabled = models.BooleanField(default=False)
    issuer = models.URLField(max_length=500)  # discovery: {issuer}/.well-known/openid-configuration
    client_id = models.CharField(max_length=255)
    client_secret = models.CharField(max_length=500, blank=True)  # never shown back in the console
    scopes = models.CharField(max_length=255, default="openid email profile")
    admit_domains = ArrayField(models.CharField(max_length=253), default=list, blank=True)
    admit_claim = models.CharField(max_length=100, blank=True)
    admit_values = ArrayField(models.CharField(max_length=255), default=list, blank=True)
    groups_claim = models.CharField(max_length=100, default="groups", blank=True)
    group_map = models.JSONField(default=dict, blank=True)  # provider's group name -> [group slug, ...]
    clearance_claim = models.CharField(max_length=100, blank=True)
    clearance_map = models.JSONField(default=dict, blank=True)  # claim value or provider group -> level name
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"sso of {self.tenant_id} ({self.issuer})"


class SsoIdentity(models.Model):
    """A person at a tenant's provider (issuer + subject), linked to their membership of that tenant.
    Signing in again finds the membership by this link, never by the e-mail the provider sends then."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    issuer = models.CharField(max_length=500)
    subject = models.CharField(max_length=255)
    membership = models.ForeignKey(Membership, on_delete=models.CASCADE, related_name="sso_identities")
    created_at = models.DateTimeField(auto_now_add=True)
    last_sign_in_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "issuer", "subject"], name="sso_identity_unique")]
