"""The report's charts: each latency label on a row of its own (none overlaps another, the
off-chart budget included) and element labels written whole, never clipped."""

from __future__ import annotations

import re

from harnessctl.eval.charts import bar_chart, histogram


def test_latency_labels_each_get_a_row_of_their_own():
    svg = histogram([0.01, 0.012, 0.02], markers={"P50": 0.012, "P95": 0.0195, "P99": 0.02, "budget": 15.0})
    rows = [float(y) for y in re.findall(r'<text x="[^"]+" y="([^"]+)"[^>]*fill=', svg)]
    assert len(rows) == 4 and len(set(rows)) == 4  # budget (off the chart), P50, P95, P99
    assert "budget 15.00s →" in svg and "P95 0.02s" in svg


def test_element_labels_are_never_clipped():
    label = "skill:compliance_sensitive_products/rule:never_promise_delivery"
    svg = bar_chart([(label, 40.0)])
    assert f">{label}</text>" in svg
    width, label_end = int(re.search(r'<svg width="(\d+)"', svg)[1]), int(re.search(r'<text x="(\d+)"', svg)[1])
    assert label_end >= 7 * len(label) and width > label_end
