"""HTML for the loop: a diagnosis section in a run's report, and a latency bench page.

Both reuse the eval report's inline-SVG charts and style, so the result is one self-contained
file (no network). :func:`render_run_report` is a run's report with the diagnosis section
placed before the case table; ``harnessctl report`` and ``harnessctl diagnose --report`` write it.

>>> html = diagnosis_section(diagnose_run("tiny1"))      # doctest: +SKIP
>>> html.startswith("<h2>Diagnosis")                    # doctest: +SKIP
True
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

from harnessctl.eval.charts import bar_chart
from harnessctl.eval.report import render_report
from harnessctl.eval.store import REPORT, RunStore
from harnessctl.eval.summary import summarize

from .diagnose import Diagnosis, diagnose_run

_CASES_HEADING = "<h2>Cases</h2>"


def diagnosis_section(d: Diagnosis, *, clusters: int = 12) -> str:
    """The diagnosis as an HTML section: impact by element and component, then each cluster
    with its example cases (viewer message, the model's steps, what was expected).

    >>> diagnosis_section(diagnose_run("runs/r1"))[:20]   # doctest: +SKIP
    """
    out = [
        f"<h2>Diagnosis — {d.n_failed} of {d.n_results} cases failed</h2>",
        (
            "<p class=meta>clusters of failures by kind, score component and harness element, ranked by impact "
            "(score lost by the cases in the cluster)</p>"
        ),
        "<div class=grid><div><h3>Impact by harness element</h3>",
        bar_chart(list(d.by_element.items())[:12], max_value=0.0, color="#cf222e"),
        "</div><div><h3>Impact by score component</h3>",
        bar_chart(list(d.by_component.items())[:8], max_value=0.0, color="#9a6700"),
        "</div></div>",
        "<table><thead><tr><th>#</th><th>kind</th><th>component</th><th>element</th><th>cases</th><th>impact</th><th>confused with</th></tr></thead><tbody>",
    ]
    for i, c in enumerate(d.clusters[:clusters], 1):
        others = ", ".join(f"{k} ({v})" for k, v in list(c.others.items())[:3])
        out.append(
            f"<tr><td class=num>{i}</td><td>{escape(c.kind)}</td><td>{escape(c.component)}</td><td><code>{escape(c.element)}</code></td>"
            f"<td class=num>{c.cases}</td><td class=num>{c.impact:.2f}</td><td>{escape(others)}</td></tr>"
        )
    out.append("</tbody></table>")
    if d.stale_names:
        out.append(
            "<h3>Stale names</h3><p class=meta>names the model used that its harness no longer has: "
            "another version (or the harness a variant was made from) called the element that</p>"
            "<table><thead><tr><th>name</th><th>meant</th><th>from</th><th>now</th><th>calls</th><th>cases</th></tr></thead><tbody>"
        )
        for e in d.stale_names:
            out.append(
                f"<tr><td><code>{escape(e['name'])}</code></td><td><code>{escape(e['element'])}</code></td>"
                f"<td>{escape(e['version'])}</td><td>{escape(e['current'] or '(removed)')}</td>"
                f"<td class=num>{e['calls']}</td><td class=num>{e['cases']}</td></tr>"
            )
        out.append("</tbody></table>")
    for i, c in enumerate(d.clusters[:clusters], 1):
        out.append(f"<details><summary>#{i} {escape(c.kind)} · {escape(c.element)} — {c.cases} cases</summary>")
        for e in c.examples:
            steps = "\n".join(e.steps) or "(no tool calls)"
            out.append(
                f"<p><b>{escape(e.suite)}/{escape(e.case_id)}</b> score {100 * e.score:.1f}{' · ' + escape(e.detail) if e.detail else ''}</p>"
                f"<pre>viewer: {escape(e.query)}\n\nsteps:\n{escape(steps)}\n\nreply: {escape(e.reply)}\n\nexpected: {escape(_expected(e.expected))}</pre>"
            )
        out.append("</details>")
    return "\n".join(out)


def _expected(exp: dict[str, Any]) -> str:
    parts = []
    if exp.get("skill"):
        parts.append(f"skill {exp['skill']}")
    if exp.get("calls"):
        parts.append("calls " + ", ".join(exp["calls"]))
    if exp.get("facts"):
        parts.append("facts " + ", ".join(exp["facts"]))
    if exp.get("faults"):
        parts.append("faults " + ", ".join(f"{k}: {'/'.join(v)}" for k, v in exp["faults"].items()))
    return "; ".join(parts) or "(the case was not at hand)"


def render_run_report(run_root: str | Path, d: Diagnosis | None = None, *, max_details: int = 200) -> str:
    """The run's HTML report with the diagnosis section before the case table; the run is
    diagnosed here unless ``d`` is given.

    >>> render_run_report("runs/r1").count("<h2>Diagnosis")   # doctest: +SKIP
    1
    """
    store = RunStore.open(run_root)
    results, manifest = store.results(), store.manifest
    budget = (manifest.get("config") or {}).get("latency_budget_s")
    html = render_report(
        results, manifest, summary=summarize(results, manifest, latency_budget_s=budget), max_details=max_details
    )
    return with_diagnosis(html, d if d is not None else diagnose_run(store.root))


def with_diagnosis(html: str, d: Diagnosis) -> str:
    """A run report (:func:`harnessctl.eval.report.render_report`) with the diagnosis section
    inserted before its case table.

    >>> with_diagnosis(render_report(results, manifest), diagnose_run("runs/r1"))   # doctest: +SKIP
    """
    section = diagnosis_section(d)
    if _CASES_HEADING in html:
        return html.replace(_CASES_HEADING, section + "\n" + _CASES_HEADING, 1)
    return html.replace("</body>", section + "</body>")


def write_run_report(run_root: str | Path, d: Diagnosis | None = None, out_file: str | Path | None = None) -> Path:
    """Write the run's HTML report with the diagnosis section before the case table
    (:func:`render_run_report`) to ``out_file``, by default the run folder's ``report.html``.

    >>> write_run_report("runs/r1", diagnose_run("runs/r1"))   # doctest: +SKIP
    """
    html = render_run_report(run_root, d)
    target = Path(out_file) if out_file else RunStore.open(run_root).root / REPORT
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(html, encoding="utf-8")
    return target


def diagnose_with_report(
    run: str | Path, *, runs_dir: str | Path = "runs", examples: int = 3, report: bool = False
) -> tuple[Diagnosis, Path | None]:
    """:func:`~harnessctl.loop.diagnose.diagnose_run` the run (an id under ``runs_dir``, or its
    folder), keeping ``examples`` cases per cluster; with ``report``, also write the run's HTML
    report with the diagnosis (:func:`write_run_report`) and return its path (else ``None``).

    >>> d, page = diagnose_with_report("tiny1", report=True)   # doctest: +SKIP
    >>> page.name                                               # doctest: +SKIP
    'report.html'
    """
    d = diagnose_run(run, runs_dir=runs_dir, examples=examples)
    if not report:
        return d, None

    return d, write_run_report(RunStore.open(run, runs_dir).root, d)
