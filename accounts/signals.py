"""What a model change in any way -- a service, SCIM, the operator's Django admin -- must bring with it.

Connected by ``accounts.apps.AccountsConfig.ready``.
"""

from __future__ import annotations

from django.db.models.signals import pre_delete

from accounts.models import Membership, Tenant
from accounts.services import membership_deleted_record, tokens_minted_by_revoke
from accounts.tenancy import acting_tenant


def minted_tokens_revoke_before_delete(sender, instance: Membership, origin=None, using="default", **kwargs) -> None:
    """A membership deleted in any way -- over SCIM, or by an operator in the Django admin, its own or its user's
    deletion -- first revokes the API and SCIM tokens it minted, each in the trail: their ``created_by`` is
    ``SET_NULL``, and no minter reads as "minted on the server", which always works (found attacking identity,
    2026-12-04: an operator deleted a rogue admin's account, and the bot token and SCIM token that admin had
    minted, and held the keys of, worked for good). The deletion itself is recorded in the membership's tenant
    (:func:`accounts.services.membership_deleted_record`; SCIM records its own). Both acting for that tenant, on the
    deletion's connection. A whole tenant being deleted takes its tokens and its trail with it."""
    if isinstance(origin, Tenant) or getattr(origin, "model", None) is Tenant:
        return
    with acting_tenant(instance.tenant_id, using=using):
        tokens_minted_by_revoke(membership=instance, actor=None, reason="its minter was removed")
        membership_deleted_record(membership=instance)


def connect() -> None:
    pre_delete.connect(minted_tokens_revoke_before_delete, sender=Membership,
                       dispatch_uid="accounts.minted_tokens_revoke_before_delete")
