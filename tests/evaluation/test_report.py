"""The self-contained HTML report (sparkfs.evaluation.report) of a small evaluation study (no Spark)."""

import base64
import json
import re
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest
from sklearn.feature_selection import f_classif

from sparkfs.evaluation.baselines import mutual_information_scores, random_scores
from sparkfs.evaluation.cross_validation import EvaluationStudy, FoldSelection, fold_plan, fold_seed
from sparkfs.evaluation.probes import add_probes
from sparkfs.evaluation.report import build_report, comparison_sentences, feature_names, mean_selection_roc
from sparkfs.evaluation.result_tables import write_results

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
HOSTILE_NAME = "<script>alert('x')</script>"
#: What the fixture's study fitted on all rows: (X, y, rank_fold, the all-rows fold), by directory.
ALL_ROWS = {}


class PageParser(HTMLParser):
    """Collects the tags, the img sources and the text of a page."""

    def __init__(self):
        super().__init__()
        self.tags, self.images, self.text = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "img":
            self.images.append(dict(attrs)["src"])

    def handle_data(self, data):
        self.text.append(data)


@pytest.fixture(scope="module")
def evaluation_directory(tmp_path_factory):
    """Three classes, 4 real features (one named HOSTILE_NAME) + 6 probes; lfs (F test), two baselines."""
    directory = tmp_path_factory.mktemp("evaluation")
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1, 2], [15, 12, 9])
    X = rng.standard_normal((y.size, 4))
    X[:, :2] += 2.0 * np.eye(3)[y][:, :2]
    X = add_probes(X, 6, seed=1)
    description = {"input": "data/<b>wine</b> & co.csv", "rows": int(y.size), "classes": [0, 1, 2],
                   "command": ["sparkfs", "evaluate", "--input", "data/<b>wine</b> & co.csv", "--methods",
                               "lfs,mutual-info,random"],
                   "feature_names": ["alcohol", HOSTILE_NAME, "ash", "magnesium"]}

    def rank_fold(method, fold):
        if method == "mutual-info":
            return mutual_information_scores(X[fold.train], y[fold.train], fold_seed(0, fold))
        if method == "random":
            return random_scores(X.shape[1], fold_seed(0, fold))
        return f_classif(X[fold.train], y[fold.train])[0]

    def data_for_fold(fold, columns):
        return X[fold.train][:, columns], y[fold.train], X[fold.test][:, columns], y[fold.test]

    study = EvaluationStudy(directory, fold_plan(y, cv=3, seed=0), ["lfs", "mutual-info", "random"], ["knn", "nb"],
                            [1, 2, 5, 100], description, n_features=X.shape[1], probe_mask=np.arange(10) >= 4)
    study.run(rank_fold, data_for_fold, progress=lambda line: None)
    assert study.fit_recommended_on_all_rows(rank_fold)   # the recommended methods, on all 36 rows
    assert study.fit_recommended_on_all_rows(rank_fold) == []   # saved: not fitted again
    write_results(directory)
    build_report(directory)
    ALL_ROWS[directory] = (X, y, rank_fold, study.all_rows_fold())
    return directory


def test_report_is_one_self_contained_page(evaluation_directory):
    page = (evaluation_directory / "report.html").read_text(encoding="utf-8")
    parser = PageParser()
    parser.feed(page)
    parser.close()
    plots = json.loads((evaluation_directory / "plots.json").read_text())
    assert [plot["file"] for plot in plots] == ["error-knn.png", "error-nb.png", "roc.png", "scores-lfs.png",
                                                "scores-mutual-info.png", "scores-random.png"]
    assert len(parser.images) == len(plots)
    for source in parser.images:
        assert source.startswith("data:image/png;base64,")
        assert base64.b64decode(source.split(",", 1)[1], validate=True).startswith(PNG_MAGIC)
    assert "http://" not in page and "https://" not in page
    assert not {"script", "link", "iframe", "object", "embed"} & set(parser.tags)
    text = "".join(parser.text)
    for heading in ("Data set", "Command", "Best test error per method and classifier",
                    "Feature-selection ROC (probes)", "Paired t-tests across folds", "Plots"):
        assert heading in text


def _headings(page: str):
    return re.findall(r"<h2>(.*?)</h2>", page)


def test_report_opens_with_the_recommendation_then_plots_then_tables(evaluation_directory):
    """Recommendation first (best method and k per classifier, features fitted on all rows), the
    plots next, the tables after them and the paired t-tests last; no `nan` anywhere in the text."""
    page = (evaluation_directory / "report.html").read_text(encoding="utf-8")
    headings = _headings(page)
    assert headings[:2] == ["Recommendation", "Plots"]
    assert headings[-1] == "Paired t-tests across folds"
    assert page.index("<img") > page.index("<h2>Recommendation</h2>")
    assert page.rindex("<img") < page.index("<h2>Best test error per method and classifier</h2>")
    parser = PageParser()
    parser.feed(page)
    assert not re.search(r"\bnan\b", "".join(parser.text), flags=re.IGNORECASE)
    # the recommendation is the lowest mean error of best.csv, with the all-rows fit's features
    best = pd.read_csv(evaluation_directory / "best.csv")
    document = json.loads((evaluation_directory / "recommendation.json").read_text())
    X, y, rank_fold, all_rows = ALL_ROWS[evaluation_directory]
    assert all_rows.train.tolist() == list(range(y.size)) and all_rows.test.size == 0
    names = feature_names(json.loads((evaluation_directory / "study.json").read_text()))
    assert [entry["classifier"] for entry in document["recommendations"]] == ["knn", "nb"]
    for entry in document["recommendations"]:
        rows = best[best["classifier"] == entry["classifier"]]
        assert entry["error_mean"] == pytest.approx(rows["error_mean"].min())
        chosen = rows[rows["error_mean"] <= rows["error_mean"].min() + 1e-12].sort_values("best_k").iloc[0]
        assert (entry["method"], entry["k"]) == (chosen["method"], chosen["best_k"])
        expected = np.argsort(-rank_fold(entry["method"], all_rows), kind="stable")[:entry["k"]]
        assert entry["feature_indices"] == expected.tolist()
        assert entry["features"] == [names[j] for j in expected]
        section = page[page.index("<h2>Recommendation</h2>"):page.index("<h2>Plots</h2>")]
        assert f'<td class="name">{entry["method"]}</td><td>{entry["k"]}</td>' in section
    assert "the method and k of lowest mean test error" in page


def test_a_pair_without_a_t_test_says_why(tmp_path):
    """Two methods with the same ranking have the same errors in every fold: no t-test, and the
    table says so instead of showing NaN; a directory without all-rows fits says how to get them."""
    rng = np.random.default_rng(2)
    y = np.repeat([0, 1], [12, 12])
    X = rng.standard_normal((y.size, 4))
    X[:, 0] += 2.0 * y
    study = EvaluationStudy(tmp_path, fold_plan(y, cv=3, seed=0), ["first", "same"], ["nb"], [1, 2],
                            {"input": "x.csv", "rows": int(y.size), "classes": [0, 1]}, n_features=4)
    study.run(lambda method, fold: f_classif(X[fold.train], y[fold.train])[0],
              lambda fold, columns: (X[fold.train][:, columns], y[fold.train], X[fold.test][:, columns], y[fold.test]),
              progress=lambda line: None)
    write_results(tmp_path)
    significance = pd.read_csv(tmp_path / "significance.csv")
    assert significance["p_value"].isna().all()
    assert significance["note"].tolist() == ["identical errors in every fold: no test"]
    page = build_report(tmp_path).read_text(encoding="utf-8")
    tests = page[page.index("<h2>Paired t-tests across folds</h2>"):]
    assert "identical errors in every fold: no test" in tests and "nan" not in tests
    document = json.loads((tmp_path / "recommendation.json").read_text())
    entry, = document["recommendations"]
    assert entry["method"] == "first" and entry["features"] is None
    assert "run the same `sparkfs evaluate` command again" in entry["note"]
    assert "run the same `sparkfs evaluate` command again" in page


def test_strings_from_data_are_escaped(evaluation_directory):
    page = (evaluation_directory / "report.html").read_text(encoding="utf-8")
    assert "<b>wine</b>" not in page and "data/&lt;b&gt;wine&lt;/b&gt; &amp; co.csv" in page
    assert "<script" not in page
    # the command is shown exactly (shell-quoted argv), once the page is unescaped by a browser
    parser = PageParser()
    parser.feed(page)
    assert "sparkfs evaluate --input 'data/<b>wine</b> & co.csv' --methods lfs,mutual-info,random" \
        in "".join(parser.text)
    # the hostile feature name is drawn in the score bars, not written into the page
    study = json.loads((evaluation_directory / "study.json").read_text())
    assert feature_names(study)[1] == HOSTILE_NAME and feature_names(study)[4:] == [f"probe {j}" for j in range(4, 10)]


def test_escaping_of_data_in_tables(tmp_path):
    """A method and a classifier name with markup in the saved tables come out escaped."""
    best = pd.DataFrame([{"method": "<i>m</i>", "classifier": "knn", "best_k": 2, "error_mean": 0.25,
                          "error_std": 0.05, "accuracy_mean": 0.75, "macro_f1_mean": 0.7,
                          "mean_fold_min_error": 0.2, "fold_min_error_std": 0.01}])
    summary = pd.DataFrame([{"method": "<i>m</i>", "classifier": "knn", "k": 2, "folds": 2, "accuracy_mean": 0.75,
                             "accuracy_std": 0.05, "macro_f1_mean": 0.7, "macro_f1_std": 0.1, "error_mean": 0.25,
                             "error_std": 0.05, "best_k": True, "selection_auc_mean": np.nan,
                             "selection_auc_std": np.nan}])
    best.to_csv(tmp_path / "best.csv", index=False)
    summary.to_csv(tmp_path / "summary.csv", index=False)
    (tmp_path / "plots.json").write_text("[]")
    (tmp_path / "study.json").write_text(json.dumps({
        "description": {"command": "run <now>"}, "n_features": 3, "classifiers": ["knn"], "feature_counts": [2],
        "methods": ["<i>m</i>"], "fold_keys": [[0, 0], [0, 1]], "separate_test": False, "probe_features": None}))
    page = build_report(tmp_path).read_text(encoding="utf-8")
    assert "<i>" not in page and "&lt;i&gt;m&lt;/i&gt;" in page and "run &lt;now&gt;" in page
    assert "Paired t-tests" not in page and "<img" not in page


def test_build_report_needs_the_results(tmp_path):
    with pytest.raises(FileNotFoundError, match="study.json, best.csv, summary.csv, plots.json"):
        build_report(tmp_path)


def test_comparison_sentences_name_the_winner_and_the_gap_to_the_best_baseline():
    best = pd.DataFrame({"method": ["lfs", "qfs", "mutual-info", "random"], "classifier": ["svm"] * 4,
                         "best_k": [10, 20, 5, 50], "error_mean": [0.10, 0.12, 0.15, 0.40]})
    sentence, = comparison_sentences(best, ["svm"], baselines=["mutual-info", "random"])
    assert sentence.startswith("svm: the lowest mean error is lfs's, 10.00% at k=10.")
    assert "lfs: 10.00%, 5.00 points lower than the best baseline mutual-info (15.00%) (33% of the baseline's" \
        in sentence
    only_baselines, = comparison_sentences(best.iloc[2:], ["svm"], baselines=["mutual-info", "random"])
    assert "baseline" not in only_baselines


def test_mean_selection_roc_averages_vertically():
    grid, mean_tpr = mean_selection_roc([(np.array([0.0, 0.0, 1.0]), np.array([0.0, 1.0, 1.0])),
                                         (np.array([0.0, 1.0]), np.array([0.0, 1.0]))], grid_size=3)
    assert grid.tolist() == [0.0, 0.5, 1.0]
    assert np.allclose(mean_tpr, [0.5, 0.75, 1.0])  # perfect curve (1 at 0) and the diagonal


def test_report_of_a_separate_test_set(tmp_path):
    """One fold (train on all rows, test on another set): std and t-tests are undefined, the page still builds."""
    rng = np.random.default_rng(3)
    y, y_test = np.repeat([0, 1], [20, 16]), np.repeat([0, 1], [10, 8])
    X, X_test = rng.standard_normal((y.size, 5)), rng.standard_normal((y_test.size, 5))
    X[:, 0] += 2.0 * y
    X_test[:, 0] += 2.0 * y_test
    folds = fold_plan(y, cv=1, test_labels=y_test)
    study = EvaluationStudy(tmp_path, folds, ["lfs", "random"], ["svm"], [1, 3], {"test_input": "test.csv"},
                            n_features=5)
    study.run(lambda method, fold: f_classif(X, y)[0] if method == "lfs" else random_scores(5, 1),
              lambda fold, columns: (X[:, columns], y, X_test[:, columns], y_test), progress=lambda line: None)
    study.write_results()
    assert pd.read_csv(tmp_path / "best.csv")["error_std"].isna().all()
    assert pd.read_csv(tmp_path / "significance.csv").empty
    page = build_report(tmp_path).read_text(encoding="utf-8")
    assert "a separate test set, 1 repeat(s)" in page and "test.csv" in page
    assert "Paired t-tests" not in page


CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--enable-logging=stderr", "--v=0"]
#: Appended to a copy of the page for the browser check only: reports every image the browser
#: could not decode (naturalWidth 0) and how many decoded, on the console.
IMAGE_PROBE = """<script>window.addEventListener("load", () => {
  const images = Array.from(document.images);
  images.filter(image => !image.complete || image.naturalWidth === 0)
        .forEach(image => console.error("image not rendered: " + image.src.slice(0, 40)));
  console.log("images rendered: " + images.filter(image => image.naturalWidth > 0).length);
});</script>"""


def test_report_renders_in_headless_chromium_without_console_errors(evaluation_directory, tmp_path):
    """Opens report.html in headless Chromium (when installed; .ci/run installs Debian's package):
    the page loads with no console message of its own, and every embedded plot decodes."""
    import shutil
    import subprocess

    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        pytest.skip("no Chromium on this machine (the page is still parsed by the other tests)")
    page = (evaluation_directory / "report.html").read_text(encoding="utf-8")
    plain = subprocess.run([browser, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile-1'}", "--dump-dom",
                            (evaluation_directory / "report.html").as_uri()],
                           capture_output=True, text=True, timeout=120)
    assert plain.returncode == 0, plain.stderr[-2000:]
    console = [line for line in plain.stderr.splitlines() if ":CONSOLE" in line]
    assert console == [], console
    assert "Best test error per method and classifier" in plain.stdout
    assert plain.stdout.count("<img") == page.count("<img") == 6
    probed = tmp_path / "probed.html"
    probed.write_text(page.replace("</body>", IMAGE_PROBE + "</body>"), encoding="utf-8")
    checked = subprocess.run([browser, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile-2'}", "--dump-dom",
                              probed.as_uri()], capture_output=True, text=True, timeout=120)
    messages = [line.split(":CONSOLE", 1)[1] for line in checked.stderr.splitlines() if ":CONSOLE" in line]
    assert any('"images rendered: 6"' in message for message in messages), checked.stderr[-2000:]
    assert not any("image not rendered" in message for message in messages), messages


def test_selections_decided_by_ties_are_announced_in_the_report(tmp_path):
    """A method whose scores are all equal (flat), one with ties at k = 2 and a greedy one with a
    tied step are named in the report's summary; ties.csv counts the folds."""
    rng = np.random.default_rng(1)
    y = np.repeat([0, 1], [12, 12])
    X = rng.standard_normal((y.size, 5))
    X[:, 0] += 2.0 * y

    def rank_fold(method, fold):
        if method == "flat":
            return np.full(X.shape[1], 0.5)
        if method == "greedy":  # an mRMR-like order whose 3rd step was a tie of 2 candidates
            return FoldSelection(np.array([5.0, 4.0, 3.0, 2.0, 1.0]), {1: [0], 2: [0, 1], 4: [0, 1, 2, 3]},
                                 tie_sizes=[1, 1, 2, 1, 1])
        return np.array([3.0, 1.0, 1.0, 1.0, 0.0])   # ties for the 2nd place

    def data_for_fold(fold, columns):
        return X[fold.train][:, columns], y[fold.train], X[fold.test][:, columns], y[fold.test]

    study = EvaluationStudy(tmp_path, fold_plan(y, cv=3, seed=0), ["flat", "tied", "greedy"], ["knn"], [1, 2, 4],
                            {"input": "x.csv", "rows": int(y.size), "classes": [0, 1]}, n_features=X.shape[1])
    study.run(rank_fold, data_for_fold, progress=lambda line: None)
    write_results(tmp_path)
    ties = pd.read_csv(tmp_path / "ties.csv")
    assert ties.set_index(["method", "k"]).loc[("flat", 2), "folds_flat"] == 3
    tied = ties[ties["method"] == "tied"].set_index("k")
    assert tied.loc[2, "folds_tied_at_cut"] == 3 and tied.loc[2, "most_tied_at_cut"] == 3
    assert tied.loc[1, "folds_tied_at_cut"] == 0 and tied.loc[4, "folds_tied_at_cut"] == 0
    greedy = ties[ties["method"] == "greedy"].set_index("k")  # order scores never tie; the tied step counts
    assert greedy["folds_tied_at_cut"].tolist() == [0, 0, 3] and greedy.loc[4, "most_tied_at_cut"] == 2
    page = build_report(tmp_path).read_text(encoding="utf-8")
    assert "flat: every feature scored the same in 3 of 3 folds" in page
    assert "tied: at k = 2 the last places were decided by tied scores" in page
