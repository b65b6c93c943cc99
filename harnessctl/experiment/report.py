"""The study's HTML report: one self-contained file (inline SVG, no network) with the table, the
goals, scores per arm and suite, learning curves from the trainer's logs, per-variant-family bars,
latency P50/P95 and the compute each arm used.

>>> html = render_report({"id": "t", "command": "c", "plan": {"preset": "quick"}, "eval_cases": 2, "arms": [],
...                       "goals": [], "compute": {}})
>>> html.startswith("<!DOCTYPE html>") and "http" not in html.split("<body>")[1]
True
"""

from __future__ import annotations

from html import escape
from typing import Any

from harnessctl.eval.charts import grouped_bars, line_chart

from .plan import SUITES
from .results import PAPER, copy_probe_line, hardware_line, ifeval_sample

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1100px;color:#1f2328;padding:0 16px}
h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
table{border-collapse:collapse;margin:8px 0}th,td{border-bottom:1px solid #eaeef2;padding:4px 8px;text-align:right}
th:first-child,td:first-child{text-align:left}th{background:#f6f8fa}.met{color:#1a7f37}.missed{color:#cf222e}.na{color:#57606a}
.meta{color:#57606a}.legend span{display:inline-block;margin-right:14px}.legend i{display:inline-block;width:10px;height:10px;margin-right:4px}
"""


def _n(x: Any, digits: int = 1) -> str:
    return "—" if not isinstance(x, (int, float)) else f"{x:.{digits}f}"


def _table(results: dict[str, Any]) -> str:
    head = [
        "arm",
        *SUITES,
        "history v1",
        "history v2",
        "tool faults",
        "P50 s",
        "P95 s",
        "steps",
        "train s",
        "chain s",
        "eval s",
    ]
    rows = ["<tr>" + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr>"]
    for arm in results["arms"]:
        if arm.get("status") != "done":
            continue
        m, c = arm["metrics"], arm["compute"]
        cells = [
            escape(arm["label"]),
            *(_n(m["scores"].get(s)) for s in SUITES),
            _n(m["slices"].get("history_v1")),
            _n(m["slices"].get("history_v2")),
            _n(m["slices"].get("tool_faults")),
            _n(m["latency"].get("p50_s"), 2),
            _n(m["latency"].get("p95_s"), 2),
            str(c.get("train_steps", 0)),
            _n(c.get("train_s"), 0),
            _n(c.get("chain_train_s"), 0),
            _n(c.get("eval_s"), 0),
        ]
        rows.append("<tr>" + "".join(f"<td>{x}</td>" for x in cells) + "</tr>")
    for key, label in (("hat", "paper: HAT"), ("fixed-sft", "paper: fixed-harness SFT")):
        p = PAPER[key]
        cells = [f"<i>{label}</i>", *(_n(p.get(s)) for s in SUITES)] + ["—"] * 10
        rows.append("<tr class=meta>" + "".join(f"<td>{x}</td>" for x in cells) + "</tr>")
    return "<table>" + "".join(rows) + "</table>"


def render_report(results: dict[str, Any]) -> str:
    """The report's HTML text for ``results.json``'s content."""
    arms = [a for a in results.get("arms", []) if a.get("status") == "done"]
    labels = [a["label"] for a in arms]
    html = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>HAT study {escape(str(results.get('id')))}</title><style>{_CSS}</style></head><body>",
        f"<h1>HAT in miniature — {escape(str(results.get('id')))} ({escape(str(results['plan'].get('preset')))})</h1>",
        (
            f"<p class=meta>{escape(str(results.get('command')))} · {escape(str(results.get('eval_cases')))} cases per suite per arm"
            f" · IFEval on {escape(ifeval_sample(results))}"
            " · suites v2 · the paper's LS-QA is our livestream suite, its Harness-Variant our variant suite</p>"
        ),
        "<h2>Results</h2>",
        _table(results),
        *([f"<p>{escape(line)}</p>"] if (line := copy_probe_line(results)) else []),
        "<h2>Goals</h2><ul>",
    ]
    for g in results.get("goals", []):
        cls = {"met": "met", "missed": "missed"}.get(g["status"], "na")
        html.append(
            f"<li><b class={cls}>{escape(g['status'])}</b> — {escape(g['goal'])} ({escape(g['rule'])}): {escape(g['numbers'])}</li>"
        )
    html.append(
        "</ul><h2>Scores per arm and suite</h2><p class=meta>whiskers: 95 % bootstrap interval over the cases scored</p>"
    )
    groups = list(SUITES) + ["history v1", "history v2", "tool faults"]
    keys = (*SUITES, "history_v1", "history_v2", "tool_faults")
    series = {
        a["label"]: [a["metrics"]["scores"].get(s) for s in SUITES]
        + [a["metrics"]["slices"].get(k) for k in ("history_v1", "history_v2", "tool_faults")]
        for a in arms
    }
    whiskers = {a["label"]: [(a["metrics"].get("intervals") or {}).get(k) for k in keys] for a in arms}
    html.append(grouped_bars(groups, series, intervals=whiskers))
    html.append(
        "<h2>Learning curves</h2><p class=meta>the trainer's logged loss (SFT, distillation) or mean reward (GRPO) per step; SFT's eval_loss is on held-out rows of its dataset, distillation's heldout_loss on the same rows of its SFT parent's (heldout_call_match: the share of their tool-calling turns whose greedy first call is the trajectory's, tool and skill)</p>"
    )
    for stage, key in (
        ("base", "loss"),
        ("sft", "loss"),
        ("sft", "eval_loss"),
        ("distill", "loss"),
        ("distill", "heldout_loss"),
        ("distill", "heldout_call_match"),
        ("rl", "reward"),
    ):
        curves = {
            a["label"]: [(p["step"], p[key]) for p in a.get("curve", []) if key in p]
            for a in arms
            if a["stage"] == stage
        }
        if curves:
            html.append(f"<h3>{stage}: {key}</h3>" + line_chart(curves, label=key))
    html.append(
        "<h2>Variant suite by family</h2><p class=meta>held-out HSA operator families and the real history (v1, v2)</p>"
    )
    families = sorted({f for a in arms for f in a["metrics"].get("families", {})})
    html.append(
        grouped_bars(
            families,
            {a["label"]: [(a["metrics"]["families"].get(f) or {}).get("score") for f in families] for a in arms},
        )
    )
    stale = {a["label"]: a["metrics"].get("stale_names") for a in arms if a["metrics"].get("stale_names")}
    if stale:
        html.append(
            "<h2>Stale names on the variant suite</h2><p class=meta>share of variant episodes (%) that called a tool "
            "or loaded a skill by a name the variant had renamed: the surface the arm was trained on, not the one it was shown</p>"
        )
        html.append(
            grouped_bars(
                ["episodes with a stale name"],
                {
                    label: [round(100.0 * u["cases"] / u["episodes"], 1) if u["episodes"] else None]
                    for label, u in stale.items()
                },
            )
        )
    html.append(
        "<h2>Latency</h2><p class=meta>seconds per episode over the agent suites, in process; the final model also through the embedded server</p>"
    )
    lat = {
        "P50": [a["metrics"]["latency"].get("p50_s") for a in arms],
        "P95": [a["metrics"]["latency"].get("p95_s") for a in arms],
    }
    top = max([v for vs in lat.values() for v in vs if isinstance(v, (int, float))] + [1.0])
    html.append(grouped_bars(labels, lat, top=top, unit="s"))
    served = [(a["label"], a["metrics"]["served_latency"]) for a in arms if a["metrics"].get("served_latency")]
    for label, s in served:
        html.append(
            f"<p>{escape(label)} through the embedded server (livestream, {s.get('n')} episodes): "
            f"P50 {_n(s.get('p50_s'), 2)} s, P95 {_n(s.get('p95_s'), 2)} s, score {_n(s.get('livestream'))}</p>"
        )
    html.append("<h2>Compute</h2>")
    html.append(
        grouped_bars(
            labels,
            {
                "train s": [a["compute"].get("train_s") for a in arms],
                "eval s": [a["compute"].get("eval_s") for a in arms],
            },
            top=1.0,
            unit="s",
        )
    )
    c = results.get("compute", {})
    html.append(
        f"<p class=meta>data {_n(c.get('data_s'), 0)} s · training {_n(c.get('train_s'), 0)} s · evaluation "
        f"{_n(c.get('eval_s'), 0)} s · wall time of the last invocation {_n(c.get('wall_s'), 0)} s"
        + (f" · {escape(where)}" if (where := hardware_line(c.get("hardware") or [])) else "")
        + "</p>"
    )
    html.append("</body></html>")
    return "\n".join(html)
