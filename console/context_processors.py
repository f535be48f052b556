"""Template context of every console page."""

from __future__ import annotations

from accounts.sso import SESSION_TENANT_KEY as SSO_TENANT_KEY


def single_sign_on(request) -> dict:
    """``sso_session``: whether this session was made by single sign-on (it acts for one tenant alone, so the
    page header offers no "Password": ``console.views.auth.password_change`` refuses such a session)."""
    session = getattr(request, "session", None)
    return {"sso_session": session is not None and session.get(SSO_TENANT_KEY) is not None}
