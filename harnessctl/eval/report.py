"""A self-contained HTML report of a run: inline SVG plots (scores by suite and intent, latency
histogram, failure categories) and a per-case drill-down. No network, no CDN, no scripts from
elsewhere: one file that opens anywhere and can be attached to a review.

>>> from harnessctl.eval.results import CaseResult
>>> html = render_report([CaseResult("livestream", "c1", score=1.0, passed=True, intent="price")],
...                      {"run_id": "demo", "model": "oracle"})
>>> html.startswith("<!DOCTYPE html>") and "<svg" in html and "http" not in html.split("<body>")[1]
True
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from html import escape
from typing import Any

from .charts import bar_chart, histogram
from .results import CaseResult
from .summary import model_label, summarize

#: The style sheet of the run report, shared by the other self-contained HTML pages (the latency bench).
REPORT_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1100px;color:#1f2328;padding:0 16px}
h1{font-size:22px;margin-bottom:4px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
h3{font-size:15px;margin-top:20px}.meta{color:#57606a}.warn{background:#fff8c5;border:1px solid #d4a72c;padding:6px 10px}.grid{display:grid;grid-template-columns:1fr 1fr;gap:16px}
table{border-collapse:collapse;width:100%;margin:8px 0}th,td{border-bottom:1px solid #eaeef2;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa}td.num{text-align:right;font-variant-numeric:tabular-nums}.pass{color:#1a7f37}.fail{color:#cf222e}
details{margin:4px 0;border:1px solid #d0d7de;border-radius:6px;padding:4px 8px}summary{cursor:pointer}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f8fa;padding:8px;border-radius:6px;font-size:12px}
.card{display:inline-block;border:1px solid #d0d7de;border-radius:8px;padding:8px 14px;margin:4px 8px 4px 0}
.card b{font-size:20px;display:block}input{padding:4px 8px;width:320px}
"""

_JS = """
function filterCases(){var q=document.getElementById('q').value.toLowerCase();
document.querySelectorAll('#cases tbody tr').forEach(function(tr){tr.style.display=tr.textContent.toLowerCase().indexOf(q)>=0?'':'none';});}
"""


def _fmt(x: Any, digits: int = 2) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return escape(str(x))


def _case_detail(r: CaseResult) -> str:
    rec = r.record or {}
    lines = []
    for m in rec.get("messages") or []:
        role = m.get("role")
        if role == "system":
            continue
        content = m.get("content") or ""
        calls = m.get("tool_calls") or []
        if calls:
            content += "\n" + "\n".join(
                f"→ {c.get('function', c).get('name')}({_args(c.get('function', c).get('arguments'))})" for c in calls
            )
        lines.append(f"[{role}] {content}".strip())
    steps = rec.get("tool_steps") or []
    step_rows = "".join(
        f"<tr><td>{escape(str(s.get('name')))}</td><td>{escape(str(s.get('key')))}</td><td>{escape(_args(s.get('arguments')))}</td>"
        f"<td class={'pass' if s.get('ok') else 'fail'}>{'ok' if s.get('ok') else escape(str(s.get('error')))}</td><td class=num>{_fmt(s.get('latency_s'), 3)}</td></tr>"
        for s in steps
    )
    comps = "".join(
        f"<tr><td>{escape(k)}</td><td class=num>{_fmt(v, 3)}</td></tr>" for k, v in sorted(r.components.items())
    )
    ife = r.details.get("ifeval")
    ife_rows = ""
    if ife:
        ife_rows = "".join(
            f"<tr><td>{escape(v['instruction_id'])}</td><td class={'pass' if v['strict'] else 'fail'}>{v['strict']}</td><td>{v['loose']}</td></tr>"
            for v in ife.get("instructions", [])
        )
        ife_rows = f"<table><tr><th>instruction</th><th>strict</th><th>loose</th></tr>{ife_rows}</table>"
    return (
        f"<details><summary><b>{escape(r.case_id)}</b> · {escape(r.suite)} · {escape(r.intent)} · "
        f"<span class={'pass' if r.passed else 'fail'}>{100 * r.score:.1f}</span> · {r.latency_s:.2f}s"
        f"{' · ' + escape(', '.join(r.failures)) if r.failures else ''}{' · error: ' + escape(r.error) if r.error else ''}</summary>"
        f"<p class=meta>families: {escape(', '.join(r.families) or '—')} · variant: {escape(str(r.variant))} · termination: {escape(r.termination)}</p>"
        f"<pre>{escape(chr(10).join(lines))}</pre>"
        + (
            f"<table><tr><th>tool</th><th>key</th><th>arguments</th><th>result</th><th>s</th></tr>{step_rows}</table>"
            if steps
            else ""
        )
        + (f"<table><tr><th>component</th><th>score</th></tr>{comps}</table>" if comps else "")
        + ife_rows
        + f"<p><b>reply:</b> {escape(rec.get('reply') or '')}</p></details>"
    )


def _args(a: Any) -> str:
    if isinstance(a, str):
        return a
    return json.dumps(a, ensure_ascii=False) if a is not None else ""


def render_report(
    results: Sequence[CaseResult],
    manifest: dict[str, Any],
    *,
    summary: dict[str, Any] | None = None,
    max_details: int = 200,
) -> str:
    """The report as one HTML string. Failing cases get a full drill-down first; passing cases
    fill the remaining ``max_details`` per suite; every case is listed in the filterable table."""
    summary = summary or summarize(results, manifest)
    suites = summary["suites"]
    title = f"harnessctl eval — {manifest.get('run_id', '')}"
    h = manifest.get("harness") or {}
    out = [
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8>",
        f"<title>{escape(title)}</title><style>{REPORT_CSS}</style><script>{_JS}</script></head><body>",
        f"<h1>{escape(title)}</h1>",
        f"<p class=meta>model <b>{escape(model_label(manifest.get('model')))}</b> · harness {escape(str(h.get('name')))} "
        f"{escape(str(h.get('version')))} @ {escape(str(h.get('commit') or '')[:10])} · created {escape(str(manifest.get('created', '')))}"
        f" · {'complete' if summary.get('complete') else 'incomplete (resume with --resume)'}</p>",
        (
            "<p class=warn><b>Reference policy:</b> these scores are the oracle's, which reads each case's answer key; "
            "they bound what the instrument can measure, not what a model does.</p>"
            if manifest.get("model") == "oracle"
            else ""
        ),
        (
            f"<p class=meta>{summary['errors']} cases ended in an error (scored 0, not passes): "
            + "; ".join(f"{e['count']} × {escape(e['error'][:200])}" for e in summary.get("first_errors") or [])
            + "</p>"
            if summary.get("errors")
            else ""
        ),
        "<div>"
        + "".join(
            f"<span class=card>{escape(s)}<b>{v['score']:.1f}</b>n={v['n']} · P95 {_fmt(v['latency'].get('p95'))}s</span>"
            for s, v in suites.items()
        )
        + "</div>",
        "<h2>Scores by suite</h2>",
        bar_chart([(s, v["score"]) for s, v in suites.items()]),
    ]
    by_suite: dict[str, list[CaseResult]] = defaultdict(list)
    for r in results:
        by_suite[r.suite].append(r)
    for s, v in suites.items():
        lat = v["latency"]
        out.append(f"<h2>{escape(s)} — {v['score']:.1f} / 100</h2>")
        out.append(
            f"<p class=meta>{v['n']} cases, {v['n_results']} results, pass rate {v['pass_rate']:.1f}%, "
            f"{v['errors']} errors, {v['cached']} cases fully cached, {v.get('cache_hits', 0)} of {v.get('model_calls', 0)} model calls from the cache</p>"
        )
        if v.get("pass_hat_k"):
            out.append("<p>pass^k: " + ", ".join(f"pass^{k} = {x:.1f}" for k, x in v["pass_hat_k"].items()) + "</p>")
        if v.get("ifeval"):
            ife = v["ifeval"]
            out.append(
                "<table><tr><th></th><th>strict</th><th>loose</th></tr>"
                f"<tr><td>prompt-level</td><td class=num>{ife['prompt_strict']:.1f}</td><td class=num>{ife['prompt_loose']:.1f}</td></tr>"
                f"<tr><td>instruction-level</td><td class=num>{ife['instruction_strict']:.1f}</td><td class=num>{ife['instruction_loose']:.1f}</td></tr></table>"
            )
        out.append("<div class=grid><div><h3>By intent</h3>")
        out.append(bar_chart([(k, x["score"]) for k, x in v["by_intent"].items()], color="#0969da"))
        out.append("</div><div><h3>Components</h3>")
        out.append(bar_chart(list(v["components"].items()), color="#1a7f37"))
        out.append("</div></div>")
        if any(k != "none" for k in v["by_family"]):
            out.append("<h3>By operator family</h3>")
            out.append(bar_chart([(k, x["score"]) for k, x in v["by_family"].items()], color="#8250df"))
        out.append("<div class=grid><div><h3>Latency</h3>")
        lat_values = [r.latency_s for r in by_suite[s] if r.error is None and not r.cached] or [
            r.latency_s for r in by_suite[s]
        ]
        out.append(
            histogram(
                lat_values,
                markers={
                    "P50": lat.get("p50"),
                    "P95": lat.get("p95"),
                    "P99": lat.get("p99"),
                    "budget": lat.get("budget_s"),
                },
            )
        )
        over = lat.get("over_budget")
        out.append(
            f"<p class=meta>P50 {_fmt(lat.get('p50'))}s · P95 {_fmt(lat.get('p95'))}s · P99 {_fmt(lat.get('p99'))}s"
            + (f" · over budget ({_fmt(lat.get('budget_s'))}s): {100 * over:.1f}%" if over is not None else "")
            + "</p></div><div><h3>Failure categories</h3>"
        )
        out.append(bar_chart(list(v["failures"].items())[:15], max_value=0.0, unit="", color="#cf222e"))
        out.append("</div></div>")

    out.append(
        "<h2>Cases</h2><p><input id=q placeholder='filter: case id, intent, failure…' oninput='filterCases()'></p>"
    )
    out.append(
        "<table id=cases><thead><tr><th>suite</th><th>case</th><th>intent</th><th>score</th><th>latency s</th><th>failures</th></tr></thead><tbody>"
    )
    ordered = sorted(results, key=lambda r: (r.suite, r.passed, r.score, r.case_id, r.repeat))
    for r in ordered:
        out.append(
            f"<tr><td>{escape(r.suite)}</td><td>{escape(r.case_id)}{'#' + str(r.repeat) if r.repeat else ''}</td><td>{escape(r.intent)}</td>"
            f"<td class='num {'pass' if r.passed else 'fail'}'>{100 * r.score:.1f}</td><td class=num>{r.latency_s:.2f}</td>"
            f"<td>{escape(', '.join(r.failures) or (r.error or ''))}</td></tr>"
        )
    out.append("</tbody></table><h2>Drill-down</h2>")
    for s in suites:
        rs = sorted(by_suite[s], key=lambda r: (r.passed, r.score, r.case_id, r.repeat))
        shown = rs[:max_details]
        out.append(f"<h3>{escape(s)} ({len(shown)} of {len(rs)} cases, failures first)</h3>")
        out.extend(_case_detail(r) for r in shown)
    fam = Counter(f for r in results for f in r.failures)
    out.append(f"<p class=meta>{len(results)} results · {sum(fam.values())} failure marks</p></body></html>")
    return "\n".join(out)
