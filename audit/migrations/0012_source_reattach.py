"""The audit action of a re-attached source path (``source.reattach``)."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('audit', '0011_all_actions'),
    ]

    operations = [
        migrations.AlterField(
            model_name='auditevent',
            name='action',
            field=models.CharField(choices=[('search', 'Search'), ('document.read', 'Document Read'), ('document.create', 'Document Create'), ('document.replace', 'Document Replace'), ('document.delete', 'Document Delete'), ('document.access', 'Document Access'), ('section.access', 'Section Access'), ('membership.create', 'Membership Create'), ('membership.update', 'Membership Update'), ('group.create', 'Group Create'), ('group.update', 'Group Update'), ('token.create', 'Token Create'), ('token.revoke', 'Token Revoke'), ('index_version.activate', 'Index Version Activate'), ('index_version.evaluate', 'Index Version Evaluate'), ('sign_in', 'Sign In'), ('sign_in.failed', 'Sign In Failed'), ('audit.settings', 'Audit Settings'), ('invitation.create', 'Invitation Create'), ('invitation.accept', 'Invitation Accept'), ('invitation.revoke', 'Invitation Revoke'), ('password_reset.request', 'Password Reset Request'), ('password_reset.done', 'Password Reset'), ('membership.delete', 'Membership Delete'), ('group.delete', 'Group Delete'), ('scim_token.create', 'Scim Token Create'), ('scim_token.revoke', 'Scim Token Revoke'), ('sso.settings', 'Sso Settings'), ('source.create', 'Source Create'), ('source.update', 'Source Update'), ('source.delete', 'Source Delete'), ('source.sync', 'Source Sync'), ('source.detach', 'Source Detach'), ('source.reattach', 'Source Reattach'), ('screening.settings', 'Screening Settings'), ('review.decision', 'Review Decision')], max_length=32),
        ),
    ]
