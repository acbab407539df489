"""Charts drawn on the server as inline SVG: no CDN, no JavaScript, readable without either."""

from __future__ import annotations

import datetime as dt

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

#: Drawing area in SVG user units; the SVG scales to its container's width.
WIDTH, HEIGHT = 720, 140
#: Room under the bars for the first and last dates.
LABELS = 18


def rows_per_day_svg(points: list[tuple[dt.date, int]]) -> SafeString:
    """A bar per day, tallest scaled to the full height; each bar's tooltip names its day and count."""
    peak = max((count for _, count in points), default=0) or 1
    slot = WIDTH / max(len(points), 1)
    bars = format_html_join(
        "",
        '<rect class="dash-bar" x="{}" y="{}" width="{}" height="{}"><title>{}: {} rows</title></rect>',
        (
            (
                f"{index * slot + 1:.1f}",
                f"{HEIGHT - count / peak * HEIGHT:.1f}",
                f"{max(slot - 2, 1):.1f}",
                f"{count / peak * HEIGHT:.1f}",
                day.isoformat(),
                count,
            )
            for index, (day, count) in enumerate(points)
        ),
    )
    first = points[0][0].isoformat() if points else ""
    last = points[-1][0].isoformat() if points else ""
    total = sum(count for _, count in points)
    return format_html(
        '<svg class="dash-chart" viewBox="0 0 {} {}" role="img" aria-label="{}" xmlns="http://www.w3.org/2000/svg">'
        "{}"
        '<line x1="0" y1="{}" x2="{}" y2="{}" class="dash-axis"></line>'
        '<text x="0" y="{}" class="dash-label">{}</text>'
        '<text x="{}" y="{}" text-anchor="end" class="dash-label">{}</text>'
        '<text x="{}" y="12" text-anchor="end" class="dash-label">peak {}/day</text>'
        "</svg>",
        WIDTH,
        HEIGHT + LABELS,
        f"Rows committed per day, {first} to {last}: {total} in all",
        bars,
        HEIGHT,
        WIDTH,
        HEIGHT,
        HEIGHT + LABELS - 4,
        first,
        WIDTH,
        HEIGHT + LABELS - 4,
        last,
        WIDTH,
        peak if total else 0,
    )
