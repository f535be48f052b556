"""Index versions (admins only): list, create, build with live progress, evaluate, activate.

The same calls as the index-version REST API (``kb.index_versions``): a version is found by
uuid or short id in the member's tenant (anything else is the same 404), created from a
config validated by ``index_version_config``, built with ``index_version_build``, activated
with ``index_version_activate`` under the acting member's reader -- so a refusal names only
documents the admin may read, and ``force`` is offered only once the service has refused,
as the API's ``force`` flag overrides the same refusals. Evaluation runs an uploaded golden
file through the real search as the admin (``kb.evaluation.version_evaluate``).
"""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import BadRequest
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.errors import ApplicationError, NotFound
from accounts.models import Role
from accounts.selectors import reader_for
from console.forms import ActivateForm, EvaluateForm, IndexVersionForm
from console.membership import member_required
from kb import evaluation
from kb import index_versions as versions
from kb.jobs import UNFINISHED
from kb.selectors import active_index_version, document_list, error_in_full, jobs_shown
from kb.serializers import error_for

admin_required = member_required(Role.ADMIN)

# The evaluation chart (SVG user units): a label column, then bars up to 100 %.
CHART_LABEL_WIDTH = 170
CHART_BAR_WIDTH = 420
CHART_BAR_HEIGHT = 14
CHART_GROUP_GAP = 10
CHART_LEGEND_HEIGHT = 24
CHART_SERIES = 4  # colours in the stylesheet (.series-0 ... .series-3); more reuse them


def _version(request, ref: str):
    """The member's tenant's version by uuid or short id, counted; anything else is a 404, and a short
    id that two of the tenant's versions start with is a 400 (as the API answers it)."""
    tenant = request.member.tenant
    try:
        version = versions.index_version_get(tenant=tenant, ref=ref)
    except NotFound:
        raise Http404("Not found.") from None
    except ApplicationError as exc:
        raise BadRequest(exc.message) from None
    return versions.index_version_list(tenant=tenant, reader=reader_for(request.member)).get(pk=version.pk)


def _render(request, template: str, context: dict, status: int = 200):
    return render(request, template, {"member": request.member, "nav": "versions", **context}, status=status)


# ----------------------------------------------------------------------------- list and create


@admin_required
@require_http_methods(["GET", "POST"])
def version_index(request):
    """The tenant's versions; POST creates one from the form (``POST /api/v1/index-versions/``)."""
    tenant = request.member.tenant
    form = IndexVersionForm(request.POST or None)
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            try:
                config = versions.index_version_config(base=form.config_data())
                version, created = versions.index_version_create(
                    tenant=tenant, config=config, name=form.cleaned_data["name"]
                )
            except ApplicationError as exc:
                form.add_service_error(exc.message)
                status = exc.status_code
            else:
                messages.success(request, f"Version {version.short_id} was created." if created else
                                 f"This configuration is version {version.short_id}, which exists already.")
                return redirect("console:index-version", ref=version.short_id)
    listed = versions.index_version_list(tenant=tenant, reader=reader_for(request.member))
    rows = [{"v": v, "summary": versions.config_summary(v.config)} for v in listed]
    return _render(request, "console/index_versions/list.html", {"rows": rows, "form": form}, status)


# ----------------------------------------------------------------------------- build progress


def _build(member, version) -> dict | None:
    """The version's latest build as the page shows it, or None when it was never built.

    A skipped or failed document is named, and its error or reason shown, only when the member may see it.
    """
    job = versions.index_version_build_job(version=version)
    if job is None:
        return None
    report = versions.index_version_build_report(job=job, reader=reader_for(member))  # titles as the member sees them
    named = {str(i) for i in document_list(member=member).filter(
        pk__in=[d["document_id"] for d in report["skipped"] + report["failed"]]
    ).values_list("pk", flat=True)}
    # A failed child's error as the job pages show it (found in review, 2026-12-04: quoted here in full, unscreened,
    # to any admin who saw the document): in full only for its uploader and admins who may read every section.
    failed_jobs = {str(j.pk): j for j in jobs_shown(member=member).filter(pk__in=[d["job_id"] for d in report["failed"]])}
    for entry in report["failed"]:
        child = failed_jobs.get(entry.pop("job_id"))
        entry["error"] = "" if child is None else error_for(
            child, error_in_full(member=member, job=child), numbers=child.error_numbers_shown)
    for entry in report["skipped"] + report["failed"]:
        entry["visible"] = entry["document_id"] in named
        if not entry["visible"]:
            # Nothing of a document they may not see: its title, nor its error, which may quote its text
            # (found attacking index versions, 2026-12-03: the error was shown beside "a document you cannot see").
            entry.update(title="", error="", reason="", document_id="")
    total = max(report["total"], 1)
    finished = report["status"] not in UNFINISHED
    # A build with nothing to do (every document built already) is a full bar once it ends.
    done = total if finished and report["total"] == 0 and report["status"] == "succeeded" else report["done"]
    return {**report, "bar_max": total, "bar_value": done, "running": not finished,
            "percent": round(100 * done / total)}


def _progress(request, version, error: str = ""):
    return _render(request, "console/index_versions/_build.html",
                   {"version": version, "build": _build(request.member, version), "build_error": error})


@admin_required
@require_GET
def version_progress(request, ref: str):
    """The build-progress fragment the detail page polls while a build runs."""
    return _progress(request, _version(request, ref))


@admin_required
@require_POST
def version_build(request, ref: str):
    """Start or resume the build (``POST /api/v1/index-versions/{id}/build/``)."""
    version = _version(request, ref)
    error = ""
    try:
        versions.index_version_build(version=version, created_by=request.user)
    except ApplicationError as exc:
        error = exc.message
    if request.htmx:
        return _progress(request, _version(request, ref), error=error)
    if error:
        messages.error(request, error)
    return redirect("console:index-version", ref=version.short_id)


# ----------------------------------------------------------------------------- detail and evaluation


def _chart(reports, labels: list[str], values: list[list[float]]) -> dict:
    """Geometry of a horizontal grouped bar chart, one group per metric and a bar per version."""
    n = len(reports)
    group = n * CHART_BAR_HEIGHT + CHART_GROUP_GAP
    groups = []
    for i, label in enumerate(labels):
        top = CHART_LEGEND_HEIGHT + i * group
        bars = []
        for j, report in enumerate(reports):
            value = max(0.0, min(100.0, values[j][i]))
            width = CHART_BAR_WIDTH * value / 100
            bars.append({"x": CHART_LABEL_WIDTH, "y": top + j * CHART_BAR_HEIGHT, "w": round(width, 1),
                         "h": CHART_BAR_HEIGHT - 2, "series": j % CHART_SERIES, "text": f"{value:.1f}",
                         "text_x": round(CHART_LABEL_WIDTH + width + 4, 1),
                         "text_y": top + j * CHART_BAR_HEIGHT + CHART_BAR_HEIGHT - 4,
                         "title": f"{report.name or report.short_id}: {label} {value:.1f} %"})
        groups.append({"label": label, "label_y": top + n * CHART_BAR_HEIGHT / 2 + 4, "bars": bars})
    legend = [{"x": CHART_LABEL_WIDTH + j * 160, "series": j % CHART_SERIES,
               "text": f"{r.name or 'version'} ({r.short_id})"} for j, r in enumerate(reports)]
    return {"width": CHART_LABEL_WIDTH + CHART_BAR_WIDTH + 50,
            "height": CHART_LEGEND_HEIGHT + len(labels) * group, "groups": groups, "legend": legend,
            "axis_x": CHART_LABEL_WIDTH, "axis_end": CHART_LABEL_WIDTH + CHART_BAR_WIDTH}


def _detail(request, version, *, evaluate_form=None, results=None, status: int = 200):
    return _render(request, "console/index_versions/detail.html", {
        "version": version, "summary": versions.config_summary(version.config),
        "config": sorted(version.config.items()), "build": _build(request.member, version),
        "evaluate_form": evaluate_form or EvaluateForm(), "results": results,
    }, status)


@admin_required
@require_GET
def version_detail(request, ref: str):
    return _detail(request, _version(request, ref))


def _evaluate_error_field(exc: ApplicationError) -> str | None:
    if exc.code == "invalid_golden" or exc.message.startswith("golden document"):
        return "golden"
    if exc.message.startswith("every k"):
        return "k"
    return None


@admin_required
@require_POST
def version_evaluate(request, ref: str):
    """Evaluate the version (and, on request, the active one beside it) on an uploaded golden file."""
    version = _version(request, ref)
    form = EvaluateForm(request.POST, request.FILES)
    if not form.is_valid():
        return _detail(request, version, evaluate_form=form, status=400)
    data = form.cleaned_data
    compared = [version]
    active = active_index_version(tenant_id=request.member.tenant_id)
    if data["compare"] and active is not None and active.pk != version.pk:
        compared.append(active)
    upload = data["golden"]
    try:
        if upload.size > evaluation.UPLOAD_MAX_BYTES:
            raise ApplicationError(
                f"the golden file is {upload.size} bytes; the limit is {evaluation.UPLOAD_MAX_BYTES}",
                code="invalid_golden",
            )
        reports = evaluation.version_evaluate(
            member=request.member, versions=compared, content=upload.read(), filename=upload.name,
            ks=data["k"], budget=data["budget"], mode=data["mode"],
        )
    except ApplicationError as exc:
        form.add_error(_evaluate_error_field(exc), exc.message)
        return _detail(request, version, evaluate_form=form, status=exc.status_code)
    labels, values = evaluation.chart_bars(reports)
    results = {
        "reports": reports, "rows": evaluation.metric_rows(reports, budget=data["budget"]),
        "chart": _chart(reports, labels, values), "mode": data["mode"], "filename": upload.name,
        "questions": reports[0].doc_hit[data["k"][0]].n if reports else 0,
    }
    return _detail(request, version, evaluate_form=form, results=results)


# ----------------------------------------------------------------------------- activation


@admin_required
@require_http_methods(["GET", "POST"])
def version_activate(request, ref: str):
    """Confirm, then activate (``POST /api/v1/index-versions/{id}/activate/``); after a refusal the
    page offers ``force``, which overrides the same refusals the API's flag overrides."""
    version = _version(request, ref)
    context = {"version": version, "summary": versions.config_summary(version.config), "error": "",
               "offer_force": False, "form": ActivateForm()}
    if request.method == "POST":
        form = ActivateForm(request.POST)
        force = form.is_valid() and form.cleaned_data["force"]
        try:
            versions.index_version_activate(version=version, force=force, reader=reader_for(request.member),
                                             actor=request.member)
        except ApplicationError as exc:
            context.update(error=exc.message, offer_force=True, form=form)
            return _render(request, "console/index_versions/activate.html", context, exc.status_code)
        messages.success(request, f"Version {version.short_id} is now active: every search of the tenant uses it.")
        return redirect("console:index-version", ref=version.short_id)
    return _render(request, "console/index_versions/activate.html", context)
