"""Revoke the live tokens of memberships deactivated before their deactivation revoked them.

Deactivating a membership now revokes the tokens it minted and its own API tokens
(``accounts.services.membership_deactivated_revoke``): a reactivated member needs new ones. A membership
deactivated before that still holds live tokens, refused only while it stays inactive, that would work again
if it were reactivated. This does for each inactive membership what deactivating it does now, recorded the
same way: the live API and SCIM tokens it minted ("its minter was deactivated"), then its own live API tokens
("its member was deactivated"), one ``token.revoke`` / ``scim_token.revoke`` record each in the membership's
tenant, by no one (the server). Nothing to undo backwards: a revoked token stays revoked.

Each tenant's rows are read and written acting for that tenant (``app.tenant_id``, local to this
migration's transaction), so this works under the tenant wall (``0002_row_level_security``,
``audit/0003_row_level_security``) as well as for the tables' owner, whom the wall does not hold.
"""

from django.db import migrations
from django.utils import timezone

MINTER = "its minter was deactivated"
MEMBER = "its member was deactivated"


def _act_for(connection, tenant_id) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config('app.tenant_id', %s, true)", ["" if tenant_id is None else str(tenant_id)])


def revoke_tokens_of_inactive_members(apps, schema_editor):
    connection = schema_editor.connection
    db = connection.alias
    Tenant = apps.get_model("accounts", "Tenant")
    Membership = apps.get_model("accounts", "Membership")
    ApiToken = apps.get_model("accounts", "ApiToken")
    ScimToken = apps.get_model("accounts", "ScimToken")
    AuditEvent = apps.get_model("audit", "AuditEvent")
    now = timezone.now()

    def revoke(tokens, *, scim: bool, tenant_id: int, reason: str) -> None:
        for token in tokens:
            token.revoked_at = now
            token.save(update_fields=["revoked_at"])
            # As accounts.services._revoke_each records it, by no one.
            before = {"prefix": token.prefix, "name": token.name, **({} if scim else {"membership": token.membership_id})}
            AuditEvent.objects.using(db).create(
                action="scim_token.revoke" if scim else "token.revoke", tenant_id=tenant_id,
                target_type="scim_token" if scim else "token", target_id=str(token.pk),
                details={"before": before, "reason": reason})

    for tenant_id in Tenant.objects.using(db).order_by("pk").values_list("pk", flat=True):
        _act_for(connection, tenant_id)
        for membership in Membership.objects.using(db).filter(tenant_id=tenant_id, is_active=False).order_by("pk"):
            live = ApiToken.objects.using(db).select_for_update().filter(revoked_at__isnull=True).order_by("pk")
            live_scim = ScimToken.objects.using(db).select_for_update().filter(revoked_at__isnull=True).order_by("pk")
            revoke(live.filter(created_by=membership), scim=False, tenant_id=tenant_id, reason=MINTER)
            revoke(live_scim.filter(created_by=membership), scim=True, tenant_id=tenant_id, reason=MINTER)
            revoke(live.filter(membership=membership), scim=False, tenant_id=tenant_id, reason=MEMBER)
    _act_for(connection, None)


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0007_membership_consented'),
        ('audit', '0011_all_actions'),
    ]

    operations = [
        migrations.RunPython(revoke_tokens_of_inactive_members, migrations.RunPython.noop),
    ]
