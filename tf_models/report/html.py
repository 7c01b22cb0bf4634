"""The report page: one self-contained HTML file from what :mod:`.collect` read.

Self-contained means it opens from a laptop's disk or a mail attachment:
CSS inline, figures as ``data:`` PNGs, no script, nothing fetched. Every
value from a file goes through :func:`html.escape`; the page skeleton is a
:class:`string.Template`.
"""

from __future__ import annotations

import base64
import html
import io
import json
from collections.abc import Iterable, Sequence
from string import Template
from typing import Any

from tf_models.protocol import JOINED

#: The scorers' order in tables and legends; others follow by name.
SCORER_ORDER = (
    "model",
    JOINED,
    "oracle",
    "coarse_pwm_reference",
    "boosted",
    "dnase_motif",
    "dnase",
    "motif_scan",
)
#: What each scorer is, in the protocol table.
SCORER_NAMES = {
    "model": "model",
    JOINED: "model joined to gradient-boosted (mean log-odds)",
    "boosted": "gradient-boosted (motifs, DNase, RNA-seq)",
    "dnase_motif": "motif match weighted by DNase",
    "dnase": "DNase alone",
    "motif_scan": "motif scan",
    "coarse_pwm_reference": "coarse-PWM reference (generator)",
    "oracle": "oracle (generator, a bound on expected auPRC)",
}
#: The metrics of a scorer, with their column headings.
METRICS = (
    ("auprc", "auPRC"),
    ("auroc", "auROC"),
    ("recall_at_fdr_10", "recall at 10% FDR"),
    ("recall_at_fdr_50", "recall at 50% FDR"),
)

_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 1180px; padding: 0 24px 48px; color: #1d232a; }
h1 { font-size: 22px; margin: 24px 0 4px; } h2 { font-size: 18px; margin-top: 36px; border-bottom: 1px solid #d0d7de; }
h3 { font-size: 15px; margin: 20px 0 6px; }
table { border-collapse: collapse; margin: 8px 0 12px; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #d0d7de; padding: 3px 8px; text-align: right; }
th { background: #f3f5f7; } td.text, th.text { text-align: left; }
tr.model td { font-weight: 600; } td.bad { color: #b42318; } td.good { color: #067647; }
img { max-width: 100%; height: auto; display: block; margin: 6px 0; }
.meta { color: #57606a; } .notes li { color: #57606a; } .problem { color: #b42318; }
.tfcell .row { display: flex; flex-wrap: wrap; gap: 16px; align-items: center; }
.tfcell img { width: 540px; } .wide { overflow-x: auto; max-width: 100%; }
code, pre { font: 12px ui-monospace, monospace; } pre { background: #f6f8fa; padding: 8px; overflow-x: auto; }
nav a { margin-right: 12px; }
"""

_PAGE = Template("""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>$title</title>
<style>$css</style>
</head>
<body>
<h1>$title</h1>
<p class="meta">$meta</p>
<nav>$nav</nav>
$body
</body>
</html>
""")


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _number(value: Any) -> str:
    if value is None:
        return "&ndash;"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if value != value or value == 0 or 0.001 <= abs(value) < 1000:
            return f"{value:.3f}"
        # p- and q-values keep their digits; large rates their thousands.
        return f"{value:.2g}" if abs(value) < 0.001 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return _e(value)


def _cell(value: Any, css: str = "") -> str:
    text = isinstance(value, str) or value is None and not css
    classes = " ".join(c for c in (css, "text" if text else "") if c)
    return f'<td class="{classes}">{_e(value) if isinstance(value, str) else _number(value)}</td>'


def table(columns: Sequence[str], rows: Iterable[Sequence[Any]], row_class: Sequence[str] | None = None) -> str:
    """An HTML table; strings left-aligned, numbers right-aligned and rounded."""
    head = "".join(f"<th>{_e(c)}</th>" for c in columns)
    body = []
    for i, row in enumerate(rows):
        css = f' class="{_e(row_class[i])}"' if row_class and row_class[i] else ""
        body.append(f"<tr{css}>" + "".join(_cell(v) for v in row) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def image(png_base64: str, alt: str) -> str:
    """An ``<img>`` holding the PNG itself."""
    return f'<img alt="{_e(alt)}" src="data:image/png;base64,{png_base64}">'


def _notes(notes: Iterable[str]) -> str:
    items = "".join(f"<li>{_e(n)}</li>" for n in notes)
    return f'<ul class="notes">{items}</ul>' if items else ""


def _scorers(names: Iterable[str]) -> list[str]:
    names = set(names)
    return [n for n in SCORER_ORDER if n in names] + sorted(names - set(SCORER_ORDER))


def anchor(key: str) -> str:
    """The element id of a TF/cell's section: ``CTCF/PC-3`` -> ``tfcell-CTCF-PC-3``."""
    return "tfcell-" + "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in key)


def _png(plot: Any, *args: Any) -> str:
    buffer = io.BytesIO()
    plot(*args, buffer)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _mean_auprc(figures: list[dict], name: str) -> float | None:
    """The mean auPRC of scorer ``name`` over ``figures`` (one dict of scorers per TF/cell); None unless all have it."""
    values = [f[name]["auprc"] for f in figures if name in f]
    return sum(values) / len(values) if values and len(values) == len(figures) else None


def per_tf_rows(report: dict[str, Any]) -> list[list[Any]]:
    """Per TF, the mean auPRC over its cells of the model and each baseline, and the model's gaps to two of them.

    Examples
    --------
    >>> report = {"results": {"CTCF/A": {"auprc": 0.8}, "CTCF/B": {"auprc": 0.6}},
    ...     "baselines": {"CTCF/A": {"motif_scan": {"auprc": 0.5}, "oracle": {"auprc": 1.0}},
    ...                   "CTCF/B": {"motif_scan": {"auprc": 0.3}, "oracle": {"auprc": 0.9}}}}
    >>> [round(v, 3) if isinstance(v, float) else v for v in per_tf_rows(report)[0]]
    ['CTCF', 2, 0.7, 0.95, None, 0.4, 0.3, 0.25]
    """
    by_tf: dict[str, list[str]] = {}
    for key in sorted(report.get("results", {})):
        by_tf.setdefault(key.split("/")[0], []).append(key)
    rows = []
    for tf, keys in by_tf.items():
        baselines = [report.get("baselines", {}).get(key, {}) for key in keys]
        model = sum(report["results"][key]["auprc"] for key in keys) / len(keys)
        scan, oracle = _mean_auprc(baselines, "motif_scan"), _mean_auprc(baselines, "oracle")
        rows.append(
            [
                tf,
                len(keys),
                model,
                oracle,
                _mean_auprc(baselines, "coarse_pwm_reference"),
                scan,
                None if scan is None else model - scan,
                None if oracle is None else oracle - model,
            ]
        )
    return rows


def training_line(report: dict[str, Any]) -> str:
    """What this figure is: one training, its seed, and what the model's filters started as."""
    from tf_models.seeding import seeding_note

    train = report.get("lineage", {}).get("train", {})
    seed = train.get("seed")
    _, seeding = seeding_note(train)
    return (
        f"One training (train.seed {seed if seed is not None else 'not recorded'}): training seeds and "
        "asynchronous ps updates move these figures by a few hundredths; docs/model-quality.md gives the mean "
        f"and range over three seeds. {seeding}"
    )


def protocol_section(report: dict[str, Any]) -> str:
    """The challenge's protocol: per group of cells, every scorer's mean auPRC and the model minus the best baseline."""
    from tf_models.protocol import HELD_OUT, TRAINING, format_interval

    groups = report.get("groups") or {}
    main = [name for name in (HELD_OUT, TRAINING) if name in groups]
    if not main:
        return "<p class=meta>No intervals in this report (evaluated before the site bootstrap).</p>"
    heldout = ", ".join(report.get("heldout_cells") or []) or "none"
    rows, classes = [], []
    scorers = _scorers({name for group in main for name in groups[group]["auprc"]})
    for scorer in scorers:
        rows.append(
            [SCORER_NAMES.get(scorer, scorer), *(format_interval(groups[g]["auprc"].get(scorer)) for g in main)]
        )
        classes.append("model" if scorer == "model" else "")
    rows.append(
        [
            "model - best baseline",
            *(
                f"{groups[g]['best_baseline']}: {format_interval(groups[g]['model_minus_best'], signed=True)}"
                for g in main
            ),
        ]
    )
    classes.append("model")
    if any(groups[g].get("joined_minus_boosted") for g in main):
        rows.append(
            [
                "joined - gradient-boosted",
                *(format_interval(groups[g].get("joined_minus_boosted"), signed=True) for g in main),
            ]
        )
        classes.append("")
    per_tf = []
    for name in sorted(groups):
        if name in main:
            continue
        group = groups[name]
        best = group["best_baseline"]
        per_tf.append(
            [
                name,
                format_interval(group["auprc"].get("model")),
                f"{best} {format_interval(group['auprc'].get(best))}" if best else "-",
                format_interval(group["model_minus_best"], signed=True),
            ]
        )
    return "\n".join(
        [
            f"<h3>Held-out cells ({_e(heldout)}) and training cells: mean test auPRC, 95% interval over test sites</h3>",
            "<p class=meta>ENCODE-DREAM scored held-out chromosomes in cells whose labels no team trained on. "
            "Baselines are scored on the same rows; the interval is a bootstrap over test sites (regions, not bins).</p>",
            table(["scorer", *main], rows, classes),
            table(["TF and cells", "model", "best baseline", "model - best baseline"], per_tf, ["model"] * len(per_tf)),
        ]
    )


def summary_section(page: dict[str, Any]) -> str:
    """Means, the per-TF gaps, then one row per TF/cell and scorer with the official metrics."""
    report = page["report"]
    means = [["model", report.get("mean_auprc"), report.get("mean_auroc")]]
    means += [[name, value, None] for name, value in report.get("baseline_mean_auprc", {}).items()]
    from tf_models.protocol import format_interval

    rows, classes = [], []
    intervals = (report.get("intervals") or {}).get("keys", {})
    for key in sorted(report.get("results", {})):
        result = report["results"][key]
        figures = {"model": result, **report.get("baselines", {}).get(key, {})}
        for name in _scorers(figures):
            interval = intervals.get(key, {}).get("methods", {}).get(name, {}).get("auprc")
            rows.append([key, name, format_interval(interval), *(figures[name].get(metric) for metric, _ in METRICS)])
            classes.append("model" if name == "model" else "")
    counts = [
        [key, r.get("n_pos"), r.get("n_neg"), r.get("n_ambiguous")] for key, r in sorted(report["results"].items())
    ]
    below = report.get("below_motif_scan") or []
    floors = report.get("floors", {})
    parts = [
        '<h2 id="summary">Summary (test chromosomes: ' + _e(", ".join(report.get("test_chroms", []))) + ")</h2>",
        protocol_section(report),
        "<h3>Means over every TF/cell</h3>",
        table(["scorer", "mean auPRC", "mean auROC"], means, ["model"] + [""] * (len(means) - 1)),
        "<p>" + _e(training_line(report)) + "</p>",
        "<h3>Per TF (auPRC, mean over cells)</h3>",
        table(
            ["TF", "cells", "model", "oracle", "coarse-PWM reference", "motif scan", "model - scan", "oracle - model"],
            per_tf_rows(report),
            ["model"] * len(per_tf_rows(report)),
        ),
        f"<p>Floors: auROC {_number(floors.get('min_mean_auroc'))}, auPRC {_number(floors.get('min_mean_auprc'))}, "
        f"auPRC margin over {_e(', '.join(floors.get('margin_baselines') or []) or '-')} "
        f"{_number(floors.get('min_auprc_margin'))}; "
        f"{'passed' if floors.get('passed', True) else '<span class=problem>not passed</span>'}. "
        + (
            f"<span class=problem>The model does not beat the motif scan on {_e(', '.join(below))}.</span>"
            if below
            else "The model beats the motif scan everywhere it was scored."
        )
        + "</p>",
        table(
            ["TF/cell", "scorer", "auPRC (95% interval over sites)", *(heading for _, heading in METRICS)],
            rows,
            classes,
        ),
        "<h3>Test bins per TF/cell</h3>",
        table(["TF/cell", "bound (B)", "unbound (U)", "ambiguous (A, removed)"], counts),
    ]
    if page.get("baselines_png"):
        parts.append(image(page["baselines_png"], "auPRC of the model beside the baselines"))
    return "\n".join(parts)


def tfcell_sections(page: dict[str, Any]) -> str:
    """One section per TF/cell: PR and ROC of every scorer, and its metrics."""
    from tf_models.curves_plot import plot_scorers

    report, parts = page["report"], ['<h2 id="tfcells">Curves per TF/cell</h2>']
    for key, curves in sorted(page["curves"].items()):
        ordered = {name: curves[name] for name in _scorers(curves)}
        figures = {"model": report["results"][key], **report.get("baselines", {}).get(key, {})}
        rows = [[name, *(figures[name].get(metric) for metric, _ in METRICS)] for name in ordered]
        parts.append(
            f'<section class="tfcell" id="{anchor(key)}" data-key="{_e(key)}"><h3>{_e(key)}</h3><div class="row">'
            + image(_png(lambda out, c=ordered, k=key: plot_scorers(c, out, k)), f"PR and ROC curves of {key}")
            + table(["scorer", *(heading for _, heading in METRICS)], rows, ["model"] + [""] * (len(rows) - 1))
            + "</div></section>"
        )
    return "\n".join(parts)


def history_section(page: dict[str, Any]) -> str:
    """Loss, validation auPRC and throughput by step (``history.json``)."""
    from tf_models.curves_plot import plot_history

    history = page["history"]
    parts = ['<h2 id="history">Training history</h2>']
    if not history:
        return parts[0] + "<p>No training history.</p>"
    parts.append(image(_png(lambda out: plot_history(history, out)), "training history"))
    columns = ["step", "epoch", "loss", "valid_auprc", "best", "examples_per_s"]
    parts.append(table(columns, [[h.get(c) for c in columns] for h in history]))
    return "\n".join(parts)


#: (split, label) of the class-balance columns.
_BALANCE_COLUMNS = (
    ("train", "B"),
    ("train", "U"),
    ("valid", "B"),
    ("valid", "U"),
    ("test", "B"),
    ("test", "U"),
    ("test", "A"),
)
#: Short headings of the manifest's outcomes.
_SHORT = {
    "excluded_blacklist": "blacklist",
    "excluded_ambiguous": "ambiguous",
    "dropped_sampling": "sampling",
    "dropped_window_out_of_bounds": "off chromosome",
    "dropped_window_n": "too many N",
    "rejected_bad_line": "bad line",
}


def data_section(page: dict[str, Any]) -> str:
    """The shards: class balance per split and what became of every input row."""
    from tf_models.report.collect import ACCOUNTING_OUTCOMES

    parts = ['<h2 id="data">Data: class balance and accounting</h2>']
    if page.get("manifest"):
        shape = page["manifest"]
        splits = shape.get("splits") or {}
        parts.append(
            f"<p>{len(shape.get('tfs') or [])} TFs, {len(shape.get('cells') or [])} cells, "
            f"window {_number(shape.get('window'))} bp, DNase {'yes' if shape.get('dnase') else 'no'}, "
            f"{_number(shape.get('negative_draws'))} negative draw(s); validation "
            f"{_e(', '.join(splits.get('valid_chroms', [])))}, test {_e(', '.join(splits.get('test_chroms', [])))}.</p>"
        )
    if page["class_balance"]:
        by_key: dict[str, dict[str, dict]] = {}
        for r in page["class_balance"]:
            by_key.setdefault(r["key"], {})[r["split"]] = r
        columns = ["TF/cell", "train B", "train U", "valid B", "valid U", "test B", "test U", "test A", "train U per B"]
        rows = [
            [
                key,
                *(splits.get(split, {}).get(label) for split, label in _BALANCE_COLUMNS),
                splits.get("train", {}).get("unbound_per_bound"),
            ]
            for key, splits in by_key.items()
        ]
        parts += [
            "<h3>Class balance of the shards (rows kept: B bound, U unbound, A ambiguous)</h3>",
            table(columns, rows),
        ]
    if page["accounting"]:
        columns = ["TF/cell", "input rows", "kept", *(_SHORT[o] for o in ACCOUNTING_OUTCOMES), "accounted"]
        keys = ["key", "input_rows", "kept", *ACCOUNTING_OUTCOMES, "accounted"]
        parts += [
            "<h3>Every input row accounted for</h3>",
            '<div class="wide">' + table(columns, [[r[k] for k in keys] for r in page["accounting"]]) + "</div>",
            "<p class=meta>blacklist: overlaps the blacklist; ambiguous: label A outside the test split; "
            "sampling: unbound, not drawn for the U:B ratio; off chromosome / too many N: the sequence window; "
            "bad line: malformed, set aside.</p>",
        ]
    if len(parts) == 1:
        parts.append("<p>No manifest: see the notes below.</p>")
    return "\n".join(parts)


def lineage_section(page: dict[str, Any]) -> str:
    """How the model was made: version, digests, shards and training configuration."""
    lineage = page["lineage"]
    fields = (
        ("version", "version"),
        ("created", "created_at"),
        ("shards", "shards_uri"),
        ("shard manifest digest", "manifest_digest"),
        ("training config digest", "training_config_digest"),
        ("config digest", "config_digest"),
        ("tfbs version", "tfbs_version"),
    )
    rows = [[label, str(lineage.get(key, ""))] for label, key in fields]
    rows.append(["model export", str(page["report"].get("model", ""))])
    train = json.dumps(lineage.get("train", {}), indent=2, sort_keys=True)
    return "\n".join(
        [
            '<h2 id="lineage">Lineage</h2>',
            table(["what", "value"], rows),
            "<details><summary>training configuration</summary><pre>" + _e(train) + "</pre></details>",
        ]
    )


def extra_section(name: str, section: dict[str, Any]) -> str:
    """One optional section another stage wrote (``unseen``, ``motifs``, ``predictions``)."""
    head = f'<section class="extra" id="extra-{_e(name)}"><h2>{_e(section["title"])}</h2>'
    if "problem" in section:
        return head + f'<p class="problem">{_e(section["problem"])}</p></section>'
    body = [table(section["columns"], section["rows"])] if section["columns"] or section["rows"] else []
    body += [image(img["png"], img["name"]) for img in section["images"]]
    body.append(_notes(section["notes"]))
    return head + "\n".join(body) + "</section>"


def render(page: dict[str, Any]) -> str:
    """The whole page for what :func:`tf_models.report.collect.collect` returned."""
    report = page["report"]
    title = f"tfbs-spark report: model {page['version']}"
    passed = report.get("floors", {}).get("passed", True)
    status = "passed the floors" if passed else "below the floors: not promoted to LATEST"
    meta = (
        f"{_e(page['report_dir'])} &middot; {status} &middot; mean auPRC {_number(report.get('mean_auprc'))}, "
        f"mean auROC {_number(report.get('mean_auroc'))} &middot; {len(report.get('results', {}))} TF/cells"
    )
    nav = [
        ("summary", "Summary"),
        ("tfcells", "Curves"),
        ("history", "Training"),
        ("data", "Data"),
        ("lineage", "Lineage"),
    ]
    nav += [(f"extra-{name}", section["title"]) for name, section in page["sections"].items()]
    body = [
        summary_section(page),
        tfcell_sections(page),
        history_section(page),
        data_section(page),
        lineage_section(page),
    ]
    body += [extra_section(name, section) for name, section in page["sections"].items()]
    if page["notes"]:
        body.append('<h2 id="notes">Notes</h2>' + _notes(page["notes"]))
    return _PAGE.substitute(
        title=_e(title),
        css=_CSS,
        meta=meta,
        nav="".join(f'<a href="#{_e(target)}">{_e(label)}</a>' for target, label in nav),
        body="\n".join(body),
    )
