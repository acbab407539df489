"""The operator dashboard on the admin index, as an inclusion tag.

A tag rather than a custom AdminSite keeps ``admin.site`` the one site every
app registers with.
"""

from django import template

from dashboard.charts import rows_per_day_svg
from dashboard.selectors import dashboard

register = template.Library()


@register.inclusion_tag("admin/chartr/dashboard.html", takes_context=True)
def chartr_dashboard(context):
    request = context.get("request")
    user = getattr(request, "user", None)
    # Only staff reach the index; the lists link to agent pages, so they need that view permission.
    can_view_agents = bool(user and user.has_perm("snapshots.view_agentsnapshot"))
    can_view_data_snapshots = bool(user and user.has_perm("datadir.view_data_snapshots"))
    can_view_projects = bool(user and user.has_perm("registry.view_project"))
    can_view_workspaces = bool(user and user.has_perm("registry.view_workspace"))
    figures = dashboard()
    # The link promises only what the data snapshots page lets this user do.
    doing = ["list"]
    if can_view_data_snapshots and user.has_perm("datadir.take_data_snapshot"):
        doing.append("take")
    if can_view_data_snapshots and user.is_superuser:
        doing.append("restore")
    data_snapshots_label = (", ".join(doing[:-1]) + " or " + doing[-1] if len(doing) > 1 else doing[0]).capitalize()
    return {
        "dashboard": figures,
        "rows_per_day_chart": rows_per_day_svg(figures.growth.rows_per_day),
        "can_view_agents": can_view_agents,
        "can_view_data_snapshots": can_view_data_snapshots,
        "can_view_projects": can_view_projects,
        "can_view_workspaces": can_view_workspaces,
        "data_snapshots_label": f"{data_snapshots_label} data snapshots",
    }
