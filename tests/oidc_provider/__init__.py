"""A real OpenID provider for the single sign-on tests: a small Django project serving
django-oauth-toolkit's OIDC provider (discovery, JWKS, authorization code with PKCE, RS256 ID tokens).
The suite starts it as a process of its own on a free port (``tests/browser/test_console_sso.py``).

Its people and their claims come from a JSON file (``OIDC_PROVIDER_CLAIMS``) the test rewrites
between sign-ins -- a group removed at the provider. Two of its people are made to send what a
broken or hostile provider would: an ID token for another audience, and one already expired."""
