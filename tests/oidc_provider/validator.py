"""Claims from the JSON file the test writes; two people get a broken ID token on purpose."""

import json
import os
import time
from pathlib import Path

from oauth2_provider.oauth2_validators import OAuth2Validator


def _person(username: str) -> dict:
    return json.loads(Path(os.environ["OIDC_PROVIDER_CLAIMS"]).read_text()).get(username, {})


class Validator(OAuth2Validator):
    oidc_claim_scope = None  # every claim, whatever the scopes

    def get_additional_claims(self, request):
        person = _person(request.user.username)
        return {key: value for key, value in person.items() if key not in ("break",)}

    def get_id_token_dictionary(self, token, token_handler, request):
        claims, expiration_time = super().get_id_token_dictionary(token, token_handler, request)
        broken = _person(request.user.username).get("break")
        if broken == "audience":
            claims["aud"] = "some-other-client"
        elif broken == "expired":
            claims["exp"] = int(time.time()) - 3600
            claims["iat"] = int(time.time()) - 7200
        return claims, expiration_time
