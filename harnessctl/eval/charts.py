"""The charts of the self-contained HTML reports (a run's, a loop's, a study's, the latency
bench's): inline SVG strings, no script and nothing fetched, each from plain numbers.

- :func:`bar_chart` — horizontal bars, one per label (scores by suite, failure counts);
- :func:`histogram` — a distribution with labelled markers (latency with P50/P95 and a budget);
- :func:`grouped_bars` — vertical bars, one group per label and one bar per series, with whiskers;
- :func:`line_chart` — lines of (x, y) points (learning curves), with :func:`legend`.

>>> bar_chart([("livestream", 80.0)]).startswith("<svg"), bar_chart([])
(True, '<p class=meta>no data</p>')
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

#: The series colours, in order.
PALETTE = ("#0969da", "#8250df", "#bf3989", "#1a7f37", "#9a6700", "#cf222e", "#57606a", "#1b7c83")


def bar_chart(
    items: Sequence[tuple[str, float]],
    *,
    max_value: float = 100.0,
    unit: str = "",
    width: int = 520,
    color: str = "#0969da",
) -> str:
    """A horizontal bar chart as an inline SVG string."""
    if not items:
        return "<p class=meta>no data</p>"
    # the label column fits the longest label (about 7 px a character at 12 px): never clipped
    row, pad = 22, 4
    label_w = max(180, 12 + 7 * max(len(str(label)) for label, _ in items))
    width = max(width, label_w + 70 + 200)
    bar_w = width - label_w - 70
    h = row * len(items) + pad * 2
    top = max(max_value, max((v for _, v in items), default=0.0)) or 1.0
    parts = [f'<svg width="{width}" height="{h}" role="img">']
    for i, (label, v) in enumerate(items):
        y = pad + i * row
        w = max(0.0, bar_w * (v / top))
        parts.append(
            f'<text x="{label_w - 6}" y="{y + 15}" text-anchor="end" font-size="12">{escape(str(label))}</text>'
        )
        parts.append(f'<rect x="{label_w}" y="{y + 3}" width="{w:.1f}" height="{row - 6}" fill="{color}" rx="2"/>')
        parts.append(f'<text x="{label_w + w + 4:.1f}" y="{y + 15}" font-size="12">{v:.1f}{escape(unit)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def histogram(
    values: Sequence[float],
    *,
    bins: int = 30,
    markers: dict[str, float] | None = None,
    width: int = 520,
    height: int = 180,
) -> str:
    """A histogram as an inline SVG string, with labelled vertical markers (P50, budget...)."""
    xs = [v for v in values if v is not None and not math.isnan(v)]
    if not xs:
        return "<p class=meta>no latencies</p>"
    markers = {k: v for k, v in (markers or {}).items() if v is not None and not math.isnan(v)}
    lo = 0.0
    # The axis follows the data; a budget far beyond it is noted instead of squashing the bars.
    hi = (max(xs) * 1.05) or 1.0
    off_chart = {k: v for k, v in markers.items() if v > hi}
    markers = {k: v for k, v in markers.items() if v <= hi}
    step = hi / bins
    counts = [0] * bins
    for x in xs:
        counts[min(bins - 1, int(x / step))] += 1
    # every label on a row of its own above the bars: the off-chart notes first, then one row per
    # marker, so that no two labels overlap however close their values
    left, bottom, line = 40, 28, 12
    top_pad = 6 + line * (len(off_chart) + len(markers))
    height += top_pad - 14
    plot_w, plot_h = width - left - 50, height - bottom - top_pad
    cmax = max(counts) or 1
    bw = plot_w / bins
    parts = [f'<svg width="{width}" height="{height}" role="img">']
    for i, c in enumerate(counts):
        h = plot_h * c / cmax
        parts.append(
            f'<rect x="{left + i * bw:.1f}" y="{top_pad + plot_h - h:.1f}" width="{max(bw - 1, 1):.1f}" height="{h:.1f}" fill="#8250df"/>'
        )
    parts.append(
        f'<line x1="{left}" y1="{top_pad + plot_h}" x2="{left + plot_w}" y2="{top_pad + plot_h}" stroke="#57606a"/>'
    )
    for frac in (0, 0.5, 1.0):
        x = left + plot_w * frac
        parts.append(
            f'<text x="{x:.1f}" y="{height - 8}" font-size="11" text-anchor="middle">{lo + (hi - lo) * frac:.2f}s</text>'
        )
    parts.append(f'<text x="{left - 4}" y="{top_pad + 8}" font-size="11" text-anchor="end">{cmax}</text>')
    for i, (name, v) in enumerate(sorted(markers.items(), key=lambda kv: kv[1])):
        x = left + plot_w * (v - lo) / (hi - lo)
        color = "#cf222e" if name == "budget" else "#1a7f37"
        parts.append(
            f'<line x1="{x:.1f}" y1="{top_pad}" x2="{x:.1f}" y2="{top_pad + plot_h}" stroke="{color}" stroke-dasharray="4 3"/>'
        )
        y = 4 + line * (len(off_chart) + i + 1)
        anchor = "end" if x > left + plot_w * 0.8 else "start"  # near the right edge: written leftwards
        parts.append(
            f'<line x1="{x:.1f}" y1="{y + 2}" x2="{x:.1f}" y2="{top_pad}" stroke="{color}" stroke-width="0.5"/>'
        )
        parts.append(
            f'<text x="{x + (-3 if anchor == "end" else 3):.1f}" y="{y}" font-size="11" text-anchor="{anchor}" '
            f'fill="{color}">{escape(name)} {v:.2f}s</text>'
        )
    for i, (name, v) in enumerate(sorted(off_chart.items(), key=lambda kv: kv[1])):
        parts.append(
            f'<text x="{left + plot_w}" y="{4 + line * (i + 1)}" font-size="11" text-anchor="end" fill="#cf222e">{escape(name)} {v:.2f}s →</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def grouped_bars(
    groups: Sequence[str],
    series: dict[str, Sequence[float | None]],
    *,
    top: float = 100.0,
    width: int = 960,
    height: int = 240,
    unit: str = "",
    intervals: dict[str, Sequence[Sequence[float] | None]] | None = None,
) -> str:
    """Vertical bars: one group per label, one bar per series (None: no bar), as inline SVG;
    ``intervals`` (per series, per group: ``[low, high]`` or None) draws a whisker on a bar.

    >>> svg = grouped_bars(["livestream"], {"HAT": [40.0]}, intervals={"HAT": [[30.0, 50.0]]})
    >>> svg.count("<rect"), svg.count('class="whisker"')
    (1, 1)
    """
    if not groups or not series:
        return "<p class=meta>no data</p>"
    left, bottom, pad = 40, 46, 12
    plot_w, plot_h = width - left - pad, height - bottom - pad
    top = max([top] + [v for vs in series.values() for v in vs if isinstance(v, (int, float))]) or 1.0
    gw = plot_w / len(groups)
    bw = max(2.0, (gw - 8) / len(series))
    parts = [f'<svg width="{width}" height="{height}" role="img">']
    for frac in (0.0, 0.5, 1.0):
        y = pad + plot_h * (1 - frac)
        parts.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" stroke="#eaeef2"/>')
        parts.append(
            f'<text x="{left - 4}" y="{y + 4:.1f}" font-size="11" text-anchor="end">{top * frac:.0f}{escape(unit)}</text>'
        )
    for gi, g in enumerate(groups):
        x0 = left + gi * gw + 4
        for si, (name, values) in enumerate(series.items()):
            v = values[gi] if gi < len(values) else None
            if not isinstance(v, (int, float)):
                continue
            h = plot_h * max(0.0, v) / top
            x = x0 + si * bw
            ivs = (intervals or {}).get(name) or []
            iv = ivs[gi] if gi < len(ivs) else None
            shown = f"{v:.1f}" + (f" (95 % {iv[0]:.1f}–{iv[1]:.1f})" if iv else "")
            parts.append(
                f'<rect x="{x:.1f}" y="{pad + plot_h - h:.1f}" width="{bw - 1:.1f}" height="{h:.1f}" '
                f'fill="{PALETTE[si % len(PALETTE)]}"><title>{escape(name)} · {escape(g)}: {shown}</title></rect>'
            )
            if iv:
                mid, lo, hi = x + (bw - 1) / 2, pad + plot_h * (1 - iv[0] / top), pad + plot_h * (1 - iv[1] / top)
                parts.append(
                    f'<path class="whisker" d="M{mid:.1f},{lo:.1f}V{hi:.1f}M{mid - 2:.1f},{lo:.1f}h4M{mid - 2:.1f},{hi:.1f}h4" '
                    'stroke="#1f2328" stroke-width="1" fill="none"/>'
                )
        parts.append(
            f'<text x="{x0 + (gw - 8) / 2:.1f}" y="{height - bottom + 16}" font-size="11" text-anchor="middle">{escape(g)[:22]}</text>'
        )
    parts.append("</svg>")
    return "".join(parts) + legend(list(series))


def line_chart(
    series: dict[str, Sequence[tuple[float, float]]], *, width: int = 460, height: int = 200, label: str = ""
) -> str:
    """Lines of (x, y) points (a learning curve per arm) as inline SVG."""
    points = [p for ps in series.values() for p in ps]
    if not points:
        return "<p class=meta>no log</p>"
    left, bottom, pad = 48, 28, 12
    plot_w, plot_h = width - left - pad, height - bottom - pad
    x_lo, x_hi = min(p[0] for p in points), max(p[0] for p in points)
    y_lo, y_hi = min(p[1] for p in points), max(p[1] for p in points)
    x_hi, y_hi = (x_hi if x_hi > x_lo else x_lo + 1), (y_hi if y_hi > y_lo else y_lo + 1)

    def xy(p: tuple[float, float]) -> str:
        return f"{left + plot_w * (p[0] - x_lo) / (x_hi - x_lo):.1f},{pad + plot_h * (1 - (p[1] - y_lo) / (y_hi - y_lo)):.1f}"

    parts = [f'<svg width="{width}" height="{height}" role="img">']
    parts.append(f'<text x="{left - 4}" y="{pad + 8}" font-size="11" text-anchor="end">{y_hi:.3g}</text>')
    parts.append(f'<text x="{left - 4}" y="{pad + plot_h}" font-size="11" text-anchor="end">{y_lo:.3g}</text>')
    parts.append(f'<text x="{left}" y="{height - 8}" font-size="11">step {x_lo:.0f}</text>')
    parts.append(
        f'<text x="{left + plot_w}" y="{height - 8}" font-size="11" text-anchor="end">{x_hi:.0f} · {escape(label)}</text>'
    )
    for i, (name, ps) in enumerate(series.items()):
        if not ps:
            continue
        color = PALETTE[i % len(PALETTE)]
        parts.append(
            f'<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{" ".join(xy(p) for p in ps)}">'
            f"<title>{escape(name)}</title></polyline>"
        )
    parts.append("</svg>")
    return "".join(parts) + legend([n for n, ps in series.items() if ps])


def legend(names: Sequence[str]) -> str:
    """The names of the series with their colours, as HTML."""
    items = "".join(
        f'<span><i style="background:{PALETTE[i % len(PALETTE)]}"></i>{escape(n)}</span>' for i, n in enumerate(names)
    )
    return f'<p class="legend">{items}</p>'


__all__ = ["PALETTE", "bar_chart", "grouped_bars", "histogram", "legend", "line_chart"]
