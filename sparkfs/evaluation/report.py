"""Figures and the self-contained HTML report of an evaluation study.

:mod:`sparkfs.evaluation.cross_validation` runs the study and writes its tables; this module
draws (matplotlib ``Figure`` + ``FigureCanvasAgg``, never pyplot, so the user's backend and
global state stay untouched) and renders ``report.html`` from what is saved in the directory:

* :func:`error_curve_figure`: mean test error against the number of features, one line per
  method (a band of +- one standard deviation over the folds), for one classifier;
* :func:`roc_figure`: the feature-selection ROC of every method (probe protocol of Yang & Hu);
* :func:`score_bar_figure`: the mean scores of a method's top features, with their names;
* :func:`build_report`: ``report.html``, one page with every image embedded as a
  ``data:image/png;base64,`` URI, no network reference, no script. Every string that comes from
  data (paths, the command, method and feature names) is HTML-escaped.

No pyspark and no import of the study module (it imports this one).
"""

from __future__ import annotations

import base64
import html
import io
import json
import shlex
import warnings
from pathlib import Path
from typing import Dict, List, Sequence

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from scipy.stats import rankdata

from sparkfs.evaluation.probes import selection_roc
from sparkfs.evaluation.recommendation import RULE, read_recommendation, recommendation_table
from sparkfs.evaluation.stability_runs import atomic_write
from sparkfs.io.strict_json import dumps as strict_dumps

#: Method names treated as baselines by the report when the description has no ``baselines``
#: list: the driver-side ones of :mod:`~sparkfs.evaluation.cross_validation` and Spark ML's tests.
BASELINE_METHOD_NAMES = ("mutual-info", "random", "anova", "chi2", "chi2-categorical")


def atomic_write_bytes(path, data: bytes) -> Path:
    """Write ``data`` to a hidden temp file next to ``path``, then rename it into place."""
    return atomic_write(path, lambda stream: stream.write(data))


def png_bytes(figure: Figure) -> bytes:
    """The figure rendered as PNG by the Agg canvas."""
    buffer = io.BytesIO()
    FigureCanvasAgg(figure).print_png(buffer)
    return buffer.getvalue()


# Figures ---------------------------------------------------------------------------------------


def selection_roc_of_scores(scores, is_relevant):
    """:func:`~sparkfs.evaluation.probes.selection_roc` of any scores: NaN ranks lowest and
    infinite scores are allowed (the ROC of the scores' ranks, equal to that of finite scores)."""
    scores = np.asarray(scores, dtype=np.float64)
    return selection_roc(rankdata(np.where(np.isnan(scores), -np.inf, scores)), is_relevant)


def mean_selection_roc(curves, grid_size: int = 101):
    """Vertical average of ROC curves ``[(fpr, tpr), ...]`` on a regular false-positive-rate grid.

    At each grid value a curve's true-positive rate is interpolated linearly between its points
    (after a vertical segment, its top). Returns ``(grid, mean_tpr)``.
    """
    grid = np.linspace(0.0, 1.0, grid_size)
    rates = []
    for fpr, tpr in curves:
        top = np.r_[fpr[1:] != fpr[:-1], True]  # last (highest) point of each run of equal fpr
        rates.append(np.interp(grid, fpr[top], tpr[top]))
    return grid, np.mean(rates, axis=0)


def error_curve_figure(summary: pd.DataFrame, classifier: str) -> Figure:
    """Mean test error (1 - accuracy) against k for one classifier, one line per method.

    ``summary`` has the columns of :func:`~sparkfs.evaluation.result_tables.summary_table`.
    The shaded band is +- one standard deviation over folds and repeats; the x axis is
    logarithmic when the feature counts span more than a factor 20.
    """
    rows = summary[summary["classifier"] == classifier]
    figure = Figure(figsize=(6.4, 4.2), dpi=100)
    axes = figure.add_subplot()
    for method, curve in rows.groupby("method", sort=False):
        curve = curve.sort_values("k")
        k, error, spread = curve["k"].to_numpy(), curve["error_mean"].to_numpy(), curve["error_std"].to_numpy()
        line, = axes.plot(k, error, marker="o", markersize=3, label=str(method))
        if np.any(np.isfinite(spread)):
            axes.fill_between(k, error - spread, error + spread, color=line.get_color(), alpha=0.12, linewidth=0)
    ks = np.unique(rows["k"].to_numpy())
    if ks.size and ks.min() > 0 and ks.max() / ks.min() > 20:
        axes.set_xscale("log")
        axes.minorticks_off()
    axes.set_xticks(ks, [str(k) for k in ks])
    axes.set_xlabel("number of selected features k")
    axes.set_ylabel("test error (1 - accuracy)")
    axes.set_title(f"Test error against the number of features: {classifier}", fontsize=10)
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    return figure


def roc_figure(curves: Dict[str, tuple]) -> Figure:
    """Feature-selection ROC curves: ``{method: (fpr, tpr, mean_auc)}``, one line per method."""
    figure = Figure(figsize=(5.2, 5.0), dpi=100)
    axes = figure.add_subplot()
    for method, (fpr, tpr, auc) in curves.items():
        axes.plot(fpr, tpr, label=f"{method} (AUC {auc:.3f})")
    axes.plot([0, 1], [0, 1], color="grey", linestyle=":", linewidth=1)
    axes.set_xlabel("share of probes selected (false positive rate)")
    axes.set_ylabel("share of real features selected (true positive rate)")
    axes.set_title("Feature-selection ROC (mean over folds)", fontsize=10)
    axes.set_xlim(0, 1)
    axes.set_ylim(0, 1.01)
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize=8, loc="lower right")
    figure.tight_layout()
    return figure


def score_bar_figure(method: str, mean_scores, std_scores, names: Sequence[str], is_probe=None,
                     top: int = 20) -> Figure:
    """Horizontal bars of the ``top`` features by mean score over the folds (error bar: std).

    Probes (``is_probe`` True) are drawn in grey. Ties in the mean score keep feature order.
    """
    mean_scores = np.asarray(mean_scores, dtype=float)
    order = np.argsort(np.where(np.isnan(mean_scores), np.inf, -mean_scores), kind="mergesort")[:top]
    figure = Figure(figsize=(6.4, 0.6 + 0.26 * max(len(order), 4)), dpi=100)
    axes = figure.add_subplot()
    colours = ["tab:grey" if is_probe is not None and is_probe[j] else "tab:blue" for j in order]
    positions = np.arange(len(order))[::-1]
    axes.barh(positions, mean_scores[order], xerr=np.asarray(std_scores, dtype=float)[order], color=colours,
              error_kw={"linewidth": 0.8})
    axes.set_yticks(positions, [str(names[j]) for j in order], fontsize=7)
    axes.set_xlabel("mean score over folds")
    note = " (grey: probes)" if is_probe is not None else ""
    axes.set_title(f"Top {len(order)} features of {method}{note}", fontsize=10)
    axes.grid(True, axis="x", alpha=0.3)
    figure.tight_layout()
    return figure


def feature_names(study: dict) -> List[str]:
    """Names of all features: ``description["feature_names"]`` (all, or the real features' with
    probes named ``probe j``), else ``feature j``."""
    n_features, probes = study["n_features"], set(study.get("probe_features") or [])
    names = study["description"].get("feature_names") or [f"feature {j}" for j in range(n_features - len(probes))]
    if len(names) < n_features:
        real = iter(names)
        names = [f"probe {j}" if j in probes else next(real) for j in range(n_features)]
    return [str(name) for name in names]


def write_plots(directory, study: dict, summary: pd.DataFrame, selection_auc: pd.DataFrame,
                scores: Dict[str, np.ndarray]) -> List[Path]:
    """``error-<classifier>.png``, ``roc.png`` (with probes), ``scores-<method>.png`` and their
    list ``plots.json`` (file, title) in ``directory``; returns the paths.

    ``study`` is the content of ``study.json``; ``scores[method]`` is (folds, n_features).
    """
    directory = Path(directory)
    plots = [(f"error-{classifier}.png", f"Test error against k: {classifier}", error_curve_figure(summary, classifier))
             for classifier in study["classifiers"]]
    is_probe = np.zeros(study["n_features"], dtype=bool)
    is_probe[study.get("probe_features") or []] = True
    if is_probe.any():
        curves = {}
        for method in study["methods"]:
            folds = [selection_roc_of_scores(row, ~is_probe)[:2] for row in scores[method]]
            mean_auc = float(selection_auc.loc[selection_auc["method"] == method, "auc"].mean())
            curves[method] = (*mean_selection_roc(folds), mean_auc)
        plots.append(("roc.png", "Feature-selection ROC of real features against probes", roc_figure(curves)))
    names = feature_names(study)
    for method in study["methods"]:
        finite = np.where(np.isfinite(scores[method]), scores[method], np.nan)
        with warnings.catch_warnings():  # a feature without any finite score: NaN, drawn last
            warnings.simplefilter("ignore", RuntimeWarning)
            mean, spread = np.nanmean(finite, axis=0), np.nanstd(finite, axis=0)
        plots.append((f"scores-{method}.png", f"Top features of {method} (mean score over folds)",
                      score_bar_figure(method, mean, spread, names, is_probe if is_probe.any() else None)))
    written = [atomic_write_bytes(directory / name, png_bytes(figure)) for name, _, figure in plots]
    manifest = [{"file": name, "title": title} for name, title, _ in plots]
    return written + [atomic_write_bytes(directory / "plots.json", strict_dumps(manifest, indent=2).encode())]


# The HTML page ---------------------------------------------------------------------------------

_STYLE = """body{font-family:sans-serif;margin:2em auto;max-width:70em;color:#222}
table{border-collapse:collapse;margin:0.5em 0 1.5em}th,td{border:1px solid #bbb;padding:0.25em 0.6em;
text-align:right}th{background:#eee}td.name,th.name{text-align:left}.best{font-weight:bold}
pre{background:#f4f4f4;padding:0.6em;white-space:pre-wrap;word-break:break-all}
figure{display:inline-block;margin:0.5em}img{max-width:100%}"""


def _text(value) -> str:
    return html.escape(str(value), quote=True)


def _percent(value) -> str:
    return "-" if value is None or not np.isfinite(value) else f"{100.0 * value:.2f}%"


def _table(frame: pd.DataFrame, name_columns: Sequence[str] = ()) -> str:
    """A plain HTML table of a data frame, every cell escaped; floats with 4 decimals."""
    def cell(tag: str, column, text) -> str:
        marked = ' class="name"' if column in name_columns else ""
        return f"<{tag}{marked}>{_text(text)}</{tag}>"

    head = "".join(cell("th", column, column) for column in frame.columns)
    body = []
    for row in frame.itertuples(index=False):
        cells = [cell("td", column, (f"{value:.4f}" if np.isfinite(value) else "-")
                      if isinstance(value, (float, np.floating)) else value)
                 for column, value in zip(frame.columns, row)]
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def _read_table(path: Path) -> pd.DataFrame:
    """A saved CSV with names kept as text (a method called ``1`` or ``NA`` stays a string)."""
    names = {"method": str, "classifier": str, "method_a": str, "method_b": str}
    return pd.read_csv(path, dtype=names, keep_default_na=False, na_values=[""])


def _baselines(description: dict, methods: Sequence[str]) -> List[str]:
    named = description.get("baselines")
    names = named if isinstance(named, list) else BASELINE_METHOD_NAMES
    return [method for method in methods if method in names]


def _best_error_table(best: pd.DataFrame, methods: Sequence[str], classifiers: Sequence[str],
                      baselines: Sequence[str]) -> str:
    """Methods x classifiers: the best mean error (its std and k); the lowest per classifier in bold."""
    lowest = best.groupby("classifier")["error_mean"].min()
    head = '<th class="name">method</th>' + "".join(f"<th>{_text(c)}</th>" for c in classifiers)
    rows = []
    for method in methods:
        label = _text(method) + (" (baseline)" if method in baselines else "")
        cells = [f'<td class="name">{label}</td>']
        for classifier in classifiers:
            match = best[(best["method"] == method) & (best["classifier"] == classifier)]
            if match.empty:
                cells.append("<td>-</td>")
                continue
            row = match.iloc[0]
            marked = ' class="best"' if np.isclose(row["error_mean"], lowest[classifier], rtol=0, atol=1e-12) else ""
            spread = "" if not np.isfinite(row["error_std"]) else f" &plusmn; {_percent(row['error_std'])}"
            cells.append(f"<td{marked}>{_percent(row['error_mean'])}{spread} (k={int(row['best_k'])})</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"


def comparison_sentences(best: pd.DataFrame, classifiers: Sequence[str], baselines: Sequence[str]) -> List[str]:
    """One plain-text sentence per classifier: the lowest-error method and, when there are both
    paper methods and baselines, the best paper method against the best baseline (in percentage
    points and relative to the baseline's error)."""
    sentences = []
    for classifier in classifiers:
        rows = best[best["classifier"] == classifier].sort_values(["error_mean", "best_k"], kind="mergesort")
        if rows.empty:
            continue
        winner = recommendation_table(rows, list(dict.fromkeys(best["method"])), [classifier]).iloc[0]
        winner = rows[rows["method"] == winner["method"]].iloc[0]
        sentence = (f"{classifier}: the lowest mean error is {winner['method']}'s, {_percent(winner['error_mean'])} "
                    f"at k={int(winner['best_k'])}.")
        is_baseline = rows["method"].isin(baselines)
        if is_baseline.any() and (~is_baseline).any():
            ours, theirs = rows[~is_baseline].iloc[0], rows[is_baseline].iloc[0]
            gap = theirs["error_mean"] - ours["error_mean"]
            relative = f" ({100.0 * gap / theirs['error_mean']:.0f}% of the baseline's error)" \
                if theirs["error_mean"] > 0 else ""
            verb = "lower" if gap >= 0 else "higher"
            sentence += (f" Best non-baseline method {ours['method']}: {_percent(ours['error_mean'])}, "
                         f"{100.0 * abs(gap):.2f} points {verb} than the best baseline {theirs['method']} "
                         f"({_percent(theirs['error_mean'])}){relative}.")
        sentences.append(sentence)
    return sentences


def _command_text(command) -> str:
    if isinstance(command, (list, tuple)):
        return shlex.join(str(part) for part in command)
    return "" if command is None else str(command)


def _image(path: Path, title: str) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return (f'<figure><img alt="{_text(title)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{_text(title)}</figcaption></figure>")


def _engines_text(directory: Path) -> str:
    """Where the classifiers ran (``engines.csv``): scikit-learn on the driver, or pyspark.ml."""
    path = directory / "engines.csv"
    if not path.exists():
        return "scikit-learn on the driver"
    engines = _read_table(path)
    words = {"scikit-learn": "scikit-learn on the driver", "spark": "pyspark.ml on Spark (reduced data above the "
             "driver budget)"}
    parts = []
    for engine, group in engines.groupby("engine", sort=False):
        counts = ", ".join(f"{c} ({n})" for c, n in zip(group["classifier"], group["fold_results"]))
        parts.append(f"{words.get(engine, engine)}: {counts}")
    return "; ".join(parts)


def size_sentences(summary: pd.DataFrame) -> List[str]:
    """One sentence per method whose selections of k features held another number of features
    (``n_selected_mean`` of ``summary.csv`` != k: a size the method cannot reach, e.g. QFS)."""
    if "n_selected_mean" not in summary.columns:
        return []
    sizes = summary.drop_duplicates(["method", "k"])
    off = sizes[(sizes["n_selected_mean"] - sizes["k"]).abs() > 1e-9]
    return [f"{method}: no selection of exactly k features for k = {', '.join(map(str, group['k']))}; the "
            "classifiers used the nearest size it selects "
            f"(mean {', '.join(f'{v:g}' for v in group['n_selected_mean'])} features)"
            for method, group in off.groupby("method", sort=False)]


def tie_sentences(ties: pd.DataFrame) -> List[str]:
    """One sentence per method whose top k was decided by ties in some fold (``ties.csv``)."""
    sentences = []
    for method, group in ties.groupby("method", sort=False):
        flat = group[group["folds_flat"] > 0]
        tied = group[(group["folds_tied_at_cut"] > 0) & (group["folds_flat"] == 0)]
        if not flat.empty:
            sentences.append(f"{method}: every feature scored the same in {int(flat['folds_flat'].max())} of "
                             f"{int(group['folds'].max())} folds, so its selection there is the order of the features "
                             "in the input, not a result.")
        if not tied.empty:
            ks = ", ".join(str(int(k)) for k in tied["k"])
            sentences.append(f"{method}: at k = {ks} the last places were decided by tied scores (by feature position) "
                             f"in some folds (at most {int(tied['most_tied_at_cut'].max())} features tied at the cut).")
    return sentences


def _protocol(study: dict) -> str:
    folds = study.get("fold_keys", [])
    repeats = len({r for r, _ in folds})
    if study.get("separate_test"):
        return f"a separate test set, {repeats} repeat(s)"
    return f"stratified {len(folds) // max(repeats, 1)}-fold cross-validation, {repeats} repeat(s)"


def _data_set_section(study: dict, engines: str = "scikit-learn on the driver") -> str:
    description = study.get("description", {})
    n_probes = len(study.get("probe_features") or [])
    protocol = _protocol(study)
    facts = [("input", description.get("input", "-")), ("test input", description.get("test_input") or "-"),
             ("rows", description.get("rows", "-")),
             ("features", f"{study['n_features']}" + (f" ({n_probes} of them probes)" if n_probes else "")),
             ("classes", description.get("classes", "-")), ("protocol", protocol),
             ("classifiers", ", ".join(study.get("classifiers", []))),
             ("classifiers ran on (fold results)", engines),
             ("numbers of features k", ", ".join(map(str, study.get("feature_counts", []))))]
    rows = "".join(f'<tr><th class="name">{_text(name)}</th><td class="name">{_text(value)}</td></tr>'
                   for name, value in facts)
    return f"<h2>Data set</h2><table>{rows}</table>"


def _context_sentence(study: dict) -> str:
    """One line under the title: what was evaluated, and how."""
    description = study.get("description", {})
    n_probes = len(study.get("probe_features") or [])
    features = f"{study['n_features']} features" + (f" ({n_probes} of them probes)" if n_probes else "")
    return (f"{description.get('input', '-')}: {description.get('rows', '-')} rows, {features}, classes "
            f"{description.get('classes', '-')}; {_protocol(study)}; "
            f"classifiers {', '.join(study.get('classifiers', []))}.")


def _feature_list(entry: dict) -> str:
    """The all-rows features of one recommendation, escaped; long lists folded in a ``details``."""
    if entry.get("features") is None:
        return f"<em>{_text(entry.get('note') or 'not fitted on all rows')}</em>"
    names = ", ".join(_text(name) for name in entry["features"])
    probes = entry.get("probes_selected") or 0
    note = f" ({probes} of them probes)" if probes else ""
    if len(entry["features"]) <= 20:
        return names + note
    return f"<details><summary>{len(entry['features'])} features{note}</summary>{names}</details>"


def _recommendation_section(directory: Path, best: pd.DataFrame, methods: Sequence[str],
                            classifiers: Sequence[str]) -> str:
    """The page's first section: per classifier the method and k of lowest mean error, and the
    features that method selects on all rows (``recommendation.json``; without it, from
    ``best.csv`` with a note that the all-rows fit is missing)."""
    document = read_recommendation(directory)
    if document is None:
        table = recommendation_table(best, methods, classifiers)
        document = {"rule": RULE, "recommendations": [
            {**row, "features": None, "note": "no all-rows fit in this directory: run the same `sparkfs evaluate` "
             "command again to fit it"} for row in table.to_dict("records")]}
    head = "".join(f'<th class="name">{name}</th>' for name in
                   ("classifier", "method", "k", "mean test error", "features (fitted on all rows)"))
    rows = []
    for entry in document["recommendations"]:
        error_std = entry.get("error_std")
        spread = "" if error_std is None or not np.isfinite(error_std) else f" &plusmn; {_percent(error_std)}"
        rows.append(f'<tr><td class="name">{_text(entry["classifier"])}</td><td class="name">{_text(entry["method"])}'
                    f'</td><td>{int(entry["k"])}</td><td>{_percent(entry["error_mean"])}{spread}</td>'
                    f'<td class="name">{_feature_list(entry)}</td></tr>')
    return (f"<h2>Recommendation</h2><p>{_text(document['rule'][0].upper() + document['rule'][1:])}.</p>"
            f"<table><tr>{head}</tr>{''.join(rows)}</table>")


def _significance_table(significance: pd.DataFrame) -> str:
    """The paired t-tests; a pair without a test says why (``note``) instead of showing NaN."""
    if "note" not in significance.columns:  # a directory written before the note column
        significance = significance.assign(note=np.where(significance["p_value"].isna(),
                                                         "the same difference in every fold: no test", ""))
    return _table(significance.fillna({"note": ""}), name_columns=("classifier", "method_a", "method_b", "note"))


def build_report(directory) -> Path:
    """Write ``directory/report.html`` from the saved outputs of an evaluation study.

    Reads ``study.json``, ``best.csv``, ``summary.csv``, ``plots.json`` with its PNGs and, when
    present, ``recommendation.json``, ``ties.csv``, ``engines.csv`` and ``significance.csv`` (all
    written by :func:`~sparkfs.evaluation.result_tables.write_results`); computes nothing new except
    the comparison sentences. Returns the path of the report.

    The page opens with the recommendation (best method and k per classifier, and the features
    fitted on all rows) and the sentences comparing methods with baselines, then the plots, then
    the tables; the paired t-tests come last.
    """
    directory = Path(directory)
    required = ["study.json", "best.csv", "summary.csv", "plots.json"]
    missing = [name for name in required if not (directory / name).exists()]
    if missing:
        raise FileNotFoundError(f"{directory} misses {', '.join(missing)}; run the evaluation (or "
                                f"sparkfs.evaluation.result_tables.write_results) first")
    study = json.loads((directory / "study.json").read_text())
    description = study.get("description", {})
    best, summary = _read_table(directory / "best.csv"), _read_table(directory / "summary.csv")
    ties = _read_table(directory / "ties.csv") if (directory / "ties.csv").exists() else pd.DataFrame(
        columns=["method", "k", "folds", "folds_flat", "folds_tied_at_cut", "most_tied_at_cut"])
    methods = list(dict.fromkeys(best["method"]))
    classifiers = [c for c in study.get("classifiers", []) if c in set(best["classifier"])]
    baselines = _baselines(description, methods)
    title = f"Feature selection evaluation: {description.get('name') or description.get('input') or directory.name}"

    sentences = comparison_sentences(best, classifiers, baselines) + size_sentences(summary) + tie_sentences(ties)
    parts = [f"<h1>{_text(title)}</h1>", f"<p>{_text(_context_sentence(study))}</p>",
             _recommendation_section(directory, best, methods, classifiers),
             "<ul>" + "".join(f"<li>{_text(s)}</li>" for s in sentences) + "</ul>"]
    plots = json.loads((directory / "plots.json").read_text())
    if plots:
        parts.append("<h2>Plots</h2>" + "".join(_image(directory / plot["file"], plot["title"]) for plot in plots))
    parts += ["<h2>Best test error per method and classifier</h2>",
              "<p>Mean over folds and repeats at the number of features k with the lowest mean error "
              "(ties to the smaller k), &plusmn; its standard deviation; the lowest per classifier in bold.</p>",
              _best_error_table(best, methods, classifiers, baselines)]
    if summary["selection_auc_mean"].notna().any():
        auc = summary.groupby("method", sort=False)[["selection_auc_mean", "selection_auc_std"]].first().reset_index()
        parts += ["<h2>Feature-selection ROC (probes)</h2>",
                  "<p>Area under the ROC of real features against probes, mean and std over folds.</p>",
                  _table(auc, name_columns=("method",))]
    best_columns = ["method", "classifier", "best_k", "error_mean", "error_std", "mean_fold_min_error"]
    parts += ["<h2>Best k per method and classifier</h2>", _table(best[best_columns], ("method", "classifier")),
              _data_set_section(study, _engines_text(directory)),
              f"<h2>Command</h2><pre>{_text(_command_text(description.get('command')) or '-')}</pre>",
              "<h2>All results</h2><details><summary>Mean and std per method, classifier and k</summary>",
              _table(summary, name_columns=("method", "classifier")), "</details>"]
    significance_file = directory / "significance.csv"
    if significance_file.exists():
        significance = _read_table(significance_file)
        if not significance.empty:
            parts += ["<h2>Paired t-tests across folds</h2>",
                      "<p>Two-sided paired t-test of the per-fold errors of two methods, each at its best k "
                      "(folds of repeated cross-validation overlap, so p-values are optimistic). A pair whose "
                      "errors differ by the same amount in every fold has no variance to test: its note says so.</p>",
                      _significance_table(significance)]
    page = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{_text(title)}</title><style>{_STYLE}</style></head><body>\n"
            + "\n".join(parts) + "\n</body></html>\n")
    return atomic_write_bytes(directory / "report.html", page.encode("utf-8"))
