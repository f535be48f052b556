"""The claims-to-membership rule of single sign-on (``accounts.sso.sso_decide``), on its own: failing
closed, and never letting a provider name a group or a clearance the tenant's mapping does not give.
(The protocol itself is tested against a real provider in tests/browser/test_console_sso.py.)"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from accounts.models import SsoConfig
from accounts.policy import AccessLevel
from accounts.sso import sso_decide


def _config(**fields) -> SsoConfig:
    base = {"issuer": "https://idp.example", "client_id": "c", "admit_domains": ["acme.example"],
            "groups_claim": "groups", "group_map": {"SecOps": "security-team", "Money": ["finance", "audit"]},
            "clearance_claim": "level", "clearance_map": {"SecOps": "confidential", "boss": "restricted"}}
    return SsoConfig(**{**base, **fields})


def _claims(**claims) -> dict:
    return {"iss": "https://idp.example", "sub": "1", "email": "ann@acme.example", "email_verified": True, **claims}


def test_no_admission_rule_admits_no_one():
    decision = sso_decide(_config(admit_domains=[], admit_claim=""), _claims())
    assert not decision.admitted and "not admitted" in decision.reason


def test_an_unverified_or_missing_address_is_refused():
    assert not sso_decide(_config(), _claims(email_verified=False)).admitted
    assert not sso_decide(_config(), _claims(email_verified="true")).admitted  # a string is not a yes
    assert not sso_decide(_config(), {k: v for k, v in _claims().items() if k != "email_verified"}).admitted
    assert not sso_decide(_config(), _claims(email="")).admitted


def test_a_domain_or_an_admitting_claim_admits():
    assert sso_decide(_config(), _claims(email="Ann@ACME.example")).admitted
    assert not sso_decide(_config(), _claims(email="ann@acme.example.evil")).admitted
    by_claim = _config(admit_domains=[], admit_claim="department", admit_values=["research"])
    assert sso_decide(by_claim, _claims(email="x@anywhere.example", department=["sales", "research"])).admitted
    assert not sso_decide(by_claim, _claims(email="x@anywhere.example", department="sales")).admitted


def test_groups_count_only_through_the_mapping():
    decision = sso_decide(_config(), _claims(groups=["SecOps", "security-team", "finance", "other-tenant/board"]))
    assert decision.group_slugs == {"security-team"}  # a provider group named like a slug counts for nothing
    assert decision.managed_slugs == {"security-team", "finance", "audit"}
    assert sso_decide(_config(), _claims(groups=["Money"])).group_slugs == {"finance", "audit"}
    assert sso_decide(_config(), _claims(groups="SecOps")).group_slugs == {"security-team"}


def test_clearance_is_the_highest_mapped_and_else_the_lowest():
    assert sso_decide(_config(), _claims()).clearance == AccessLevel.PUBLIC
    assert sso_decide(_config(), _claims(groups=["SecOps"])).clearance == AccessLevel.CONFIDENTIAL
    assert sso_decide(_config(), _claims(groups=["SecOps"], level="boss")).clearance == AccessLevel.RESTRICTED
    assert sso_decide(_config(), _claims(level="restricted")).clearance == AccessLevel.PUBLIC  # a level name is no key


@given(st.dictionaries(st.text(max_size=12), st.one_of(st.text(max_size=12), st.lists(st.text(max_size=12)),
                                                        st.integers(), st.booleans(), st.none()), max_size=6))
def test_whatever_the_provider_sends_nothing_unmapped_is_granted(extra):
    config = _config()
    decision = sso_decide(config, {**extra, **_claims(), "groups": extra.get("groups"), "level": extra.get("level")})
    assert decision.group_slugs <= decision.managed_slugs
    mapped_levels = {AccessLevel.PUBLIC, AccessLevel.CONFIDENTIAL, AccessLevel.RESTRICTED}
    assert decision.clearance in mapped_levels
