"""``Membership.consented``: whether the person agreed to the membership (accounts.models). A membership made
before this migration is counted as agreed to -- nothing recorded how it was made -- so no one loses a
tenant at sign-in; new rows default to not agreed, and each way in sets it."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0006_api_token_created_by'),
    ]

    operations = [
        migrations.AddField(
            model_name='membership',
            name='consented',
            field=models.BooleanField(default=True),
        ),
        migrations.AlterField(
            model_name='membership',
            name='consented',
            field=models.BooleanField(default=False),
        ),
    ]
