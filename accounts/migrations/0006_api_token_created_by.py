"""Who minted each API token (``ApiToken.created_by``): the admin who saw its key. Tokens minted before
this migration take their minter from the audit trail (the ``token.create`` record's membership); one
the trail names no one for (minted on the server) stays without."""

import django.db.models.deletion
from django.db import migrations, models

BACKFILL = """
UPDATE accounts_apitoken AS t SET created_by_id = e.membership_id
FROM audit_event AS e
WHERE e.action = 'token.create' AND e.target_type = 'token' AND e.target_id = t.id::text
  AND e.membership_id IS NOT NULL AND e.tenant_id = (SELECT m.tenant_id FROM accounts_membership m WHERE m.id = t.membership_id)
  AND EXISTS (SELECT 1 FROM accounts_membership m WHERE m.id = e.membership_id)
"""


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0005_single_sign_on'),
        ('audit', '0011_all_actions'),
    ]

    operations = [
        migrations.AddField(
            model_name='apitoken',
            name='created_by',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='accounts.membership'),
        ),
        migrations.RunSQL(BACKFILL, migrations.RunSQL.noop),
    ]
