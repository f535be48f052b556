"""Revoke the live tokens without a minter that the audit trail does not show were minted on the server.

A token without a minter (``ApiToken.created_by``, ``ScimToken.created_by`` null) reads as minted on the server
(``kb_user``, ``kb_tenant``, ``kb_demo``) and works for good: no admin's authority to lose. Since 2026-12-04 a
deleted membership revokes what it minted first (``accounts.signals``), but before that the minter's deletion
only nulled the link (``SET_NULL``), and ``0006_api_token_created_by`` left null the tokens whose minter was
already gone. The trail tells them apart: a token's ``token.create`` / ``scim_token.create`` record, in the
token's tenant, names the member who minted it (``membership_id``) and names none for one minted on the server
(``accounts.services.api_token_create``, ``accounts.scim.scim_token_create`` with no actor). So a live token
without a minter stays only when its tenant's trail holds its creation record(s) and none names a member;
otherwise it is revoked, one ``token.revoke`` / ``scim_token.revoke`` record each in its tenant, by no one:
"its minter was removed" when the record names a member (deleted since), "who minted it is not recorded" when
there is no record (the trail expired it, or it was made without one) -- failing closed: the operator mints a
new one on the server. Nothing to undo backwards: a revoked token stays revoked.

Each tenant's rows are read and written acting for that tenant (``app.tenant_id``, local to this migration's
transaction), as ``0008`` does, so this works under the tenant wall as well as for the tables' owner.
"""

from django.db import migrations
from django.utils import timezone

REMOVED = "its minter was removed"
UNRECORDED = "who minted it is not recorded"


def _act_for(connection, tenant_id) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config('app.tenant_id', %s, true)", ["" if tenant_id is None else str(tenant_id)])


def revoke_tokens_of_unknown_minters(apps, schema_editor):
    connection = schema_editor.connection
    db = connection.alias
    Tenant = apps.get_model("accounts", "Tenant")
    ApiToken = apps.get_model("accounts", "ApiToken")
    ScimToken = apps.get_model("accounts", "ScimToken")
    AuditEvent = apps.get_model("audit", "AuditEvent")
    now = timezone.now()

    def minters(tenant_id: int, action: str, target_type: str, ids: list[int]) -> dict[str, set]:
        """Each token id's creation records in the tenant's trail: the members they name (None: the server)."""
        named: dict[str, set] = {}
        for target_id, membership_id in AuditEvent.objects.using(db).filter(
                tenant_id=tenant_id, action=action, target_type=target_type,
                target_id__in=[str(pk) for pk in ids]).values_list("target_id", "membership_id"):
            named.setdefault(target_id, set()).add(membership_id)
        return named

    def revoke(tokens, *, scim: bool, tenant_id: int) -> None:
        tokens = list(tokens)
        action = "scim_token.create" if scim else "token.create"
        named = minters(tenant_id, action, "scim_token" if scim else "token", [t.pk for t in tokens])
        for token in tokens:
            members = named.get(str(token.pk))
            if members == {None}:
                continue  # minted on the server, by the trail's word
            token.revoked_at = now
            token.save(update_fields=["revoked_at"])
            # As accounts.services._revoke_each records it, by no one.
            before = {"prefix": token.prefix, "name": token.name, **({} if scim else {"membership": token.membership_id})}
            AuditEvent.objects.using(db).create(
                action="scim_token.revoke" if scim else "token.revoke", tenant_id=tenant_id,
                target_type="scim_token" if scim else "token", target_id=str(token.pk),
                details={"before": before, "reason": REMOVED if members else UNRECORDED})

    for tenant_id in Tenant.objects.using(db).order_by("pk").values_list("pk", flat=True):
        _act_for(connection, tenant_id)
        revoke(ApiToken.objects.using(db).select_for_update().filter(
            membership__tenant_id=tenant_id, created_by__isnull=True, revoked_at__isnull=True).order_by("pk"),
            scim=False, tenant_id=tenant_id)
        revoke(ScimToken.objects.using(db).select_for_update().filter(
            tenant_id=tenant_id, created_by__isnull=True, revoked_at__isnull=True).order_by("pk"),
            scim=True, tenant_id=tenant_id)
    _act_for(connection, None)


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0009_retired_tenant_slugs'),
        ('audit', '0011_all_actions'),
    ]

    operations = [
        migrations.RunPython(revoke_tokens_of_unknown_minters, migrations.RunPython.noop),
    ]
