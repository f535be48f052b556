"""Sign-in passwords: set one under Django's password validators, or generate one.

``kb_user set-password`` and ``make demo`` set passwords here, so both refuse what the
validators refuse (``AUTH_PASSWORD_VALIDATORS``) with the same messages.
"""

from __future__ import annotations

import secrets

from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import transaction

from accounts.errors import ApplicationError, NotFound
from accounts.models import User

GENERATED_BYTES = 15  # 20 URL-safe characters


@transaction.atomic
def user_set_password(*, email: str, password: str) -> User:
    """Give the user ``email`` a new sign-in password; their other sessions end at their next request.

    Refuses (ApplicationError, ``invalid_password``) an empty password and any the validators
    refuse, naming every reason; an unknown e-mail is NotFound.
    """
    user = User.objects.select_for_update().filter(email=email.strip().lower()).first()
    if user is None:
        raise NotFound(f"no user {email.strip().lower()!r}")
    if not password:
        raise ApplicationError("the password is empty", code="invalid_password")
    try:
        validate_password(password, user)
    except ValidationError as exc:
        raise ApplicationError(" ".join(exc.messages), code="invalid_password") from None
    user.set_password(password)
    user.save(update_fields=["password"])
    return user


def password_generate() -> str:
    """A random password that every configured validator accepts."""
    while True:
        password = secrets.token_urlsafe(GENERATED_BYTES)
        try:
            validate_password(password)
        except ValidationError:  # e.g. all digits, however unlikely
            continue
        return password


def validate_new_password(password: str, user: User | None = None) -> None:
    """Refuse (ApplicationError, ``invalid_password``) an empty password and any the validators refuse."""
    if not password:
        raise ApplicationError("the password is empty", code="invalid_password")
    try:
        validate_password(password, user)
    except ValidationError as exc:
        raise ApplicationError(" ".join(exc.messages), code="invalid_password") from None
