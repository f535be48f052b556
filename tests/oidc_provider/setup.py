"""``python -m tests.oidc_provider.setup CLIENT_ID SECRET REDIRECT_URI...``: the provider's database,
its registered client (confidential, authorization code, RS256, no consent screen) and its people
(every key of the claims file, with the password ``provider password``)."""

import json
import os
import sys
from pathlib import Path

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.oidc_provider.settings")
django.setup()

from django.contrib.auth.models import User  # noqa: E402
from django.core.management import call_command  # noqa: E402
from oauth2_provider.models import Application  # noqa: E402

PASSWORD = "provider password"


def main(client_id: str, secret: str, *redirect_uris: str) -> None:
    call_command("migrate", verbosity=0)
    for username in json.loads(Path(os.environ["OIDC_PROVIDER_CLAIMS"]).read_text()):
        User.objects.create_user(username=username, password=PASSWORD)
    Application.objects.create(
        name="bulkhead", client_id=client_id, client_secret=secret, client_type=Application.CLIENT_CONFIDENTIAL,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE, algorithm=Application.RS256_ALGORITHM,
        redirect_uris=" ".join(redirect_uris), skip_authorization=True,
    )


if __name__ == "__main__":
    main(*sys.argv[1:])
