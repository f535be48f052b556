"""The SCIM 2.0 endpoints at ``/scim/v2/`` (RFC 7644): thin views over :mod:`accounts.scim`.

Every request carries ``Authorization: Bearer <a tenant's SCIM token>``; the token's tenant is the
only one acted for (``accounts.tenancy``), and every answer, errors included, is a SCIM message
(``application/scim+json``).
"""

from __future__ import annotations

import json
import logging

from django.http import HttpResponse
from django.views.decorators.csrf import csrf_exempt
from pydantic import ValidationError
from scim2_models import Context, Error, ResponseParameters, SearchRequest
from scim2_models import Group as ScimGroup
from scim2_models import User as ScimUser
from scim2_models.exceptions import (
    InvalidSyntaxException,
    NotFoundException,
    NotImplementedException,
    SCIMException,
)

from accounts import scim
from accounts.ratelimit import RateLimited, rate_hit

logger = logging.getLogger(__name__)
CONTENT_TYPE = "application/scim+json"
MAX_BODY_BYTES = 1024 * 1024
DEFAULT_COUNT = 100
# A start past every resource is an empty page; past this one it would overflow the query's OFFSET (a bigint).
MAX_START = 2**62


def _answer(body: dict | None, status: int = 200, *, location: str = "") -> HttpResponse:
    response = HttpResponse(json.dumps(body) if body is not None else b"", status=status,
                            content_type=CONTENT_TYPE if body is not None else None)
    if location:
        response["Location"] = location
    return response


def _error(status: int, detail: str, scim_type: str | None = None) -> HttpResponse:
    return _answer(Error(status=status, scim_type=scim_type, detail=detail).model_dump(), status)


def _base(request) -> str:
    from django.conf import settings

    root = settings.BULKHEAD_PUBLIC_URL or f"{request.scheme}://{request.get_host()}"
    return f"{root}/scim/v2"


def _body(request) -> dict:
    if len(request.body) > MAX_BODY_BYTES:
        raise InvalidSyntaxException(detail="the body is too large")
    try:
        body = json.loads(request.body or b"null")
    except (ValueError, RecursionError):
        raise InvalidSyntaxException(detail="the body is not JSON") from None
    if not isinstance(body, dict):
        raise InvalidSyntaxException(detail="the body is not a JSON object")
    return body


def _validation_error(exc: ValidationError) -> HttpResponse:
    errors = Error.from_validation_errors(exc.errors())
    first = errors[0] if isinstance(errors, list) else errors
    status = int(first.status or 400)
    return _answer(first.model_dump(), status)


def scim_endpoint(view):
    """Bearer-token authentication, the tenant acted for, and every failure as a SCIM error."""

    @csrf_exempt
    def wrapper(request, *args, **kwargs):
        header = request.headers.get("Authorization", "")
        scheme, _, key = header.partition(" ")
        token = scim.scim_token_authenticate(key.strip()) if scheme.lower() == "bearer" and key.strip() else None
        if token is None:
            response = _error(401, "a tenant's SCIM bearer token is required")
            response["WWW-Authenticate"] = 'Bearer realm="scim"'
            return response
        try:
            rate_hit(scope="scim", ident=str(token.pk), limit=6000, window_seconds=60)
            with scim.SCIM_POLICY:  # parsing and PATCHes accept what Entra ID and Okta send
                return view(request, token.tenant, *args, **kwargs)
        except RateLimited:
            return _error(429, "too many requests; slow down")
        except SCIMException as exc:
            return _answer(exc.to_error().model_dump(), int(exc.status))
        except ValidationError as exc:
            return _validation_error(exc)
        except ValueError as exc:  # a filter or a path that does not parse
            return _error(400, str(exc)[:500], "invalidFilter")

    return wrapper


def _list_args(request) -> tuple[str | None, int, int, ResponseParameters]:
    def number(name: str, default: int) -> int:
        raw = request.GET.get(name, "")
        try:
            return int(raw) if raw else default
        except ValueError:
            raise InvalidSyntaxException(detail=f"{name} must be an integer") from None

    start = min(max(number("startIndex", 1), 1), MAX_START)
    count = min(max(number("count", DEFAULT_COUNT), 0), scim.MAX_RESULTS)
    return request.GET.get("filter") or None, start, count, _parameters(request)


def _parameters(request, model=None) -> ResponseParameters:
    data = {key: request.GET[key] for key in ("attributes", "excludedAttributes") if request.GET.get(key)}
    return ResponseParameters.model_validate(data)


def _one(resource, request, status: int = 200, context=Context.RESOURCE_QUERY_RESPONSE) -> HttpResponse:
    body = resource.model_dump(scim_ctx=context, response_parameters=_parameters(request))
    return _answer(body, status, location=resource.meta.location if status == 201 else "")


# ----------------------------------------------------------------------------- discovery


@scim_endpoint
def service_provider_config(request, tenant):
    if request.method != "GET":
        return _error(405, "GET only")
    return _answer(scim.service_provider_config(_base(request)).model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE))


@scim_endpoint
def schemas(request, tenant, schema_id: str | None = None):
    if request.method != "GET":
        return _error(405, "GET only")
    found = scim.schemas(_base(request))
    if schema_id is not None:
        match = next((s for s in found if s.id == schema_id), None)
        if match is None:
            raise NotFoundException(detail=f"no schema {schema_id}")
        return _answer(match.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE))
    from scim2_models import ListResponse, Schema

    listed = ListResponse[Schema](total_results=len(found), start_index=1, items_per_page=len(found), resources=found)
    return _answer(listed.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE))


@scim_endpoint
def resource_types(request, tenant, type_id: str | None = None):
    if request.method != "GET":
        return _error(405, "GET only")
    found = scim.resource_types(_base(request))
    if type_id is not None:
        match = next((t for t in found if t.id == type_id), None)
        if match is None:
            raise NotFoundException(detail=f"no resource type {type_id}")
        return _answer(match.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE))
    from scim2_models import ListResponse, ResourceType

    listed = ListResponse[ResourceType](total_results=len(found), start_index=1, items_per_page=len(found),
                                        resources=found)
    return _answer(listed.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE))


# ----------------------------------------------------------------------------- users and groups


def _search_body(request) -> tuple[str | None, int, int, ResponseParameters]:
    search = SearchRequest.model_validate(_body(request), scim_ctx=Context.SEARCH_REQUEST)
    start = min(max(search.start_index or 1, 1), MAX_START)
    count = min(max(search.count if search.count is not None else DEFAULT_COUNT, 0), scim.MAX_RESULTS)
    return (str(search.filter) if search.filter else None), start, count, search


def _collection(request, tenant, *, model, lister, creator):
    if request.method == "GET":
        filter_text, start, count, parameters = _list_args(request)
    elif request.method == "POST" and request.path.rstrip("/").endswith("/.search"):
        filter_text, start, count, parameters = _search_body(request)
    elif request.method == "POST":
        resource = model.model_validate(_body(request), scim_ctx=Context.RESOURCE_CREATION_REQUEST)
        created = creator(tenant=tenant, resource=resource)
        return _one(created, request, 201, Context.RESOURCE_CREATION_RESPONSE)
    else:
        return _error(405, "GET or POST")
    total, page = lister(tenant=tenant, filter_text=filter_text, start=start, count=count, base=_base(request))
    return _answer(scim.Page(total, start, page).response(model, response_parameters=parameters))


def _item(request, *, model, get, replace, patch, delete, as_resource):
    found = get()
    base = _base(request)
    if request.method == "GET":
        return _one(as_resource(found, base), request)
    if request.method == "PUT":
        resource = model.model_validate(_body(request), scim_ctx=Context.RESOURCE_REPLACEMENT_REQUEST)
        return _one(as_resource(replace(found, resource), base), request,
                    context=Context.RESOURCE_REPLACEMENT_RESPONSE)
    if request.method == "PATCH":
        return _one(as_resource(patch(found, _body(request), base), base), request,
                    context=Context.RESOURCE_PATCH_RESPONSE)
    if request.method == "DELETE":
        delete(found)
        return HttpResponse(status=204)
    return _error(405, "GET, PUT, PATCH or DELETE")


@scim_endpoint
def users(request, tenant):
    return _collection(request, tenant, model=ScimUser, lister=scim.user_list,
                       creator=lambda tenant, resource: scim.user_resource(
                           scim.user_create(tenant=tenant, resource=resource), _base(request)))


@scim_endpoint
def user(request, tenant, user_id: str):
    return _item(
        request, model=ScimUser, get=lambda: scim.user_get(tenant=tenant, user_id=user_id),
        replace=lambda m, r: scim.user_replace(membership=m, resource=r),
        patch=lambda m, body, base: scim.user_patch(membership=m, patch=body, base=base),
        delete=lambda m: scim.user_delete(membership=m),
        as_resource=lambda m, base: scim.user_resource(scim.user_get(tenant=tenant, user_id=str(m.pk)), base),
    )


@scim_endpoint
def groups(request, tenant):
    return _collection(request, tenant, model=ScimGroup, lister=scim.group_list,
                       creator=lambda tenant, resource: scim.group_resource(
                           scim.group_create(tenant=tenant, resource=resource), _base(request)))


@scim_endpoint
def group(request, tenant, group_id: str):
    return _item(
        request, model=ScimGroup, get=lambda: scim.group_get(tenant=tenant, group_id=group_id),
        replace=lambda g, r: scim.group_replace(group=g, resource=r),
        patch=lambda g, body, base: scim.group_patch(group=g, patch=body, base=base),
        delete=lambda g: scim.group_delete(group=g),
        as_resource=lambda g, base: scim.group_resource(g, base),
    )


@scim_endpoint
def search_everything(request, tenant):
    """``POST /.search`` over every resource type at once: not offered (RFC 7644 §3.4.3 makes it optional)."""
    raise NotImplementedException(detail="search one resource type: POST /Users/.search or /Groups/.search")


@scim_endpoint
def not_found(request, tenant, rest: str = ""):
    raise NotFoundException(detail="no such SCIM endpoint")
