"""mRMR, JMI and CMIM (:mod:`sparkfs.core.information`) as scikit-learn selectors.

The composition of ``spark/information.information_selection`` on in-memory rows: the codes of the
non-zero values (equal-frequency cut points of every row's non-zero values,
:func:`sparkfs.core.information.equal_frequency_cuts` and :func:`~sparkfs.core.information.bin_codes`,
or the values as codes), the relevance counts of (feature, code, class), then the greedy search
(:func:`sparkfs.core.information.greedy_selection`) whose every step counts the codes of the last
chosen feature jointly with every feature's over the rows where it is non-zero
(:func:`sparkfs.core.information.pair_step_information`). The counts are integers, so the result is
the Spark selector's for any partitioning. The cut points come from every row: the Spark
selector's with ``binSampleSize`` >= n (its default draws 10,000 rows by content above that).
The greedy runs over every feature (the Spark layer first tries a bounded candidate set, proven to
give the same run). ``fit(X, y, sample_weight)`` counts weight sums and cuts at weighted quantiles
(note 6 of :mod:`sparkfs.core.information`), as the Spark selector's ``weightCol``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import check_is_fitted

from sparkfs.core import information as info_math
from sparkfs.core.options import DISCRETIZATIONS
from sparkfs.core.param_caps import MAX_BINS
from sparkfs.core.selection import percentile_count
from sparkfs.errors import InvalidInputError
from sparkfs.sklearn.base import DEFAULT_NUM_FEATURES, FeatureScores, SparkfsSelector, WeightedFit, bad_param, is_int


def feature_codes(X, bins: int, discretization: str, sample_weight=None) -> sp.csr_matrix:
    """The codes of the non-zero values of ``X`` as a CSR matrix (an exact zero is code 0: not
    stored), by equal-frequency cut points of every row (weighted quantiles with ``sample_weight``)
    or the values themselves (note 1 of :mod:`sparkfs.core.information`)."""
    rows, columns, values = info_math.non_zero_entries(X)
    if discretization == "equal-frequency":
        cuts = info_math.equal_frequency_cuts(X, bins, sample_weight)
        codes = info_math.bin_codes(values, columns, cuts)
    else:
        bad = info_math.not_codes(values, bins)
        if bad.any():
            first = int(np.argmax(bad))
            raise InvalidInputError(info_math.not_a_code_message(columns[first], values[first], bins))
        codes = values.astype(np.int64)
    return sp.csr_matrix((codes, (rows, columns)), shape=X.shape, dtype=np.int64)


def relevance_counts(codes: sp.csr_matrix, labels, bins: int, num_classes: int, sample_weight=None) -> np.ndarray:
    """(p, bins - 1, C) counts (weight sums with ``sample_weight``) of (feature, code >= 1, class)
    over the rows."""
    p, inner = codes.shape[1], bins - 1
    row_of_entry = np.repeat(np.arange(codes.shape[0]), np.diff(codes.indptr))
    keys = (codes.indices.astype(np.int64) * inner + codes.data - 1) * num_classes + labels[row_of_entry]
    weights = None if sample_weight is None else sample_weight[row_of_entry]
    return np.bincount(keys, weights=weights, minlength=p * inner * num_classes).reshape(p, inner, num_classes)


def step_counts(codes: sp.csr_matrix, codes_by_column: sp.csc_matrix, labels, selected: int, bins: int,
                num_classes: int, sample_weight=None):
    """The sorted distinct keys of (feature j, code of j - 1, code of ``selected`` - 1, class) over
    the rows where ``selected`` is non-zero, and their counts (weight sums with ``sample_weight``;
    the input of :func:`sparkfs.core.information.pair_step_information`)."""
    inner = bins - 1
    start, stop = codes_by_column.indptr[selected], codes_by_column.indptr[selected + 1]
    rows_s, codes_s = codes_by_column.indices[start:stop], codes_by_column.data[start:stop]
    part = codes[rows_s]
    lengths = np.diff(part.indptr)
    row_part = np.repeat((codes_s.astype(np.int64) - 1) * num_classes + labels[rows_s], lengths)
    keys = (part.indices.astype(np.int64) * inner + part.data - 1) * (inner * num_classes) + row_part
    if sample_weight is None:
        return np.unique(keys, return_counts=True)
    distinct, inverse = np.unique(keys, return_inverse=True)
    return distinct, np.bincount(inverse, weights=np.repeat(sample_weight[rows_s], lengths), minlength=distinct.size)


class InformationFamilySelector(WeightedFit, SparkfsSelector):
    """Greedy forward selection by mutual information (Spark: ``InformationSelector(criterion=...)``).

    Parameters
    ----------
    criterion : {"mrmr", "jmi", "cmim"}, default "mrmr"
    mrmr_form : {"difference", "quotient"}, default "difference"
        mRMR's MID or MIQ.
    bins : int in [2, 256], default 10
        Codes per feature: an exact zero is code 0, the non-zero values take bins - 1 codes.
    discretization : {"equal-frequency", "none"}, default "equal-frequency"
        "none": the values are integer codes in [0, bins).
    num_features, selection_mode, selection_threshold, allow_many_classes, missing
        ``num_features`` features are chosen (or the ``percentile`` share); a greedy selection has no
        score threshold (``threshold`` is refused) and no p-values.

    Attributes
    ----------
    scores_ : ndarray (n_features,)
        m for the first of the m chosen, down to 1; 0 for the others (the Spark model's scores).
    selection_order_ : list of int
        The chosen features in the order the search chose them.
    relevance_ : ndarray (n_features,)
        I(X_j; Y) in nats.

    Notes
    -----
    A smaller ``num_features`` set after the fit selects the first chosen (a greedy order's prefix);
    a larger one needs a new fit. Memory: the codes (one per non-zero) and p x bins x C counts, one
    step's joint counts at a time; work per step O(non-zeros of the rows where the last chosen
    feature is non-zero).
    """

    criterion = None  # a named subclass fixes it; the generic class takes it as a Param
    _choices = (("criterion", info_math.CRITERIA),)

    def __init__(self, criterion="mrmr", *, mrmr_form="difference", bins=10, discretization="equal-frequency",
                 num_features=None, threshold=None, selection_mode="numTopFeatures", selection_threshold=None,
                 allow_many_classes=False,
                 kept_features=None, excluded_features=None, missing="refuse"):
        super().__init__(num_features=num_features, threshold=threshold, selection_mode=selection_mode,
                         selection_threshold=selection_threshold, allow_many_classes=allow_many_classes,
                         kept_features=kept_features, excluded_features=excluded_features,
                         missing=missing)
        self.criterion = criterion
        self.mrmr_form = mrmr_form
        self.bins = bins
        self.discretization = discretization

    @property
    def method(self) -> str:
        return self.criterion

    def _check_method_params(self) -> None:
        owner = type(self).__name__
        choices = self._choices + (("mrmr_form", info_math.MRMR_FORMS), ("discretization", DISCRETIZATIONS))
        for name, allowed in choices:
            if getattr(self, name) not in allowed:
                raise bad_param(owner, name, "a str among {" + ", ".join(map(repr, allowed)) + "}", getattr(self, name))
        if not (is_int(self.bins) and 2 <= self.bins <= MAX_BINS):
            raise bad_param(owner, "bins", f"an int in the range [2, {MAX_BINS}]", self.bins)
        if self.threshold is not None:
            raise ValueError(f"{owner}: a greedy selection has no score threshold; set num_features instead")

    def _count(self, num_features: int) -> int:
        if self.selection_mode == "percentile":
            fraction = 0.1 if self.selection_threshold is None else self.selection_threshold
            return percentile_count(num_features, fraction)
        return DEFAULT_NUM_FEATURES if self.num_features is None else self.num_features

    def _score_features(self, X, y, sample_weight=None) -> FeatureScores:
        labels = self._class_labels(y)
        num_select = min(self._count(X.shape[1]), X.shape[1])
        if num_select < 1:
            raise InvalidInputError(f"{type(self).__name__}: selection_threshold={self.selection_threshold} of "
                                    f"{X.shape[1]} features keeps none; raise it")
        num_classes, index = labels.values.size, labels.index
        codes = feature_codes(X, self.bins, self.discretization, sample_weight)
        codes_by_column = codes.tocsc()
        non_zero_table = relevance_counts(codes, index, self.bins, num_classes, sample_weight)
        class_totals = labels.counts if sample_weight is None else np.bincount(index, sample_weight, num_classes)
        relevance_tables = info_math.relevance_table(non_zero_table, class_totals)

        def step_terms(selected: int):
            keys, counts = step_counts(codes, codes_by_column, index, selected, self.bins, num_classes, sample_weight)
            return info_math.pair_step_information(keys, counts, non_zero_table, relevance_tables[selected])

        relevance = info_math.mutual_information(relevance_tables)
        keep, exclude = self._forced(X.shape[1])  # the search starts from the kept, never takes the excluded
        result = info_math.greedy_selection(relevance, step_terms, num_select, self.criterion, self.mrmr_form,
                                            start=keep, excluded=exclude)
        return FeatureScores(info_math.order_scores(result.order, X.shape[1]), None,
                             {"selection_order": [int(j) for j in result.order], "relevance": relevance,
                              "forced": np.array([len(keep), *keep, *exclude], dtype=np.int64)})

    def _selected(self) -> np.ndarray:
        """The first chosen, as many as the rule asks (a prefix of the greedy order)."""
        check_is_fitted(self, "scores_")
        self._check_selection_params()
        self._check_method_params()
        count = min(self._count(self.scores_.shape[0]), self.scores_.shape[0])
        keep, exclude = self._forced(self.scores_.shape[0])
        if [len(keep), *keep, *exclude] != self.forced_.tolist():
            raise ValueError(f"{type(self).__name__}'s greedy search started from the kept features of its fit and "
                             "left out its excluded ones; kept_features or excluded_features changed since: fit it "
                             "again")
        if count > len(self.selection_order_):
            raise ValueError(f"{type(self).__name__} was fitted for {len(self.selection_order_)} features and is "
                             f"asked for {count}: fit it again")
        return np.sort(np.asarray(self.selection_order_[:count], dtype=np.int64))


def _named_criterion(criterion: str, class_name: str, summary: str) -> type:
    """An :class:`InformationFamilySelector` with ``criterion`` fixed (its ``__init__`` without it)."""

    def __init__(self, *, mrmr_form="difference", bins=10, discretization="equal-frequency", num_features=None,
                 threshold=None, selection_mode="numTopFeatures", selection_threshold=None, allow_many_classes=False,
                 kept_features=None, excluded_features=None, missing="refuse"):
        SparkfsSelector.__init__(self, num_features=num_features, threshold=threshold, selection_mode=selection_mode,
                                 selection_threshold=selection_threshold, allow_many_classes=allow_many_classes,
                                 kept_features=kept_features, excluded_features=excluded_features,
                                 missing=missing)
        self.mrmr_form, self.bins, self.discretization = mrmr_form, bins, discretization

    doc = (f"{summary}\n\n    ``method`` ``{criterion}`` of sparkfs (Spark: ``InformationSelector(criterion="
           f"'{criterion}')``); see :class:`InformationFamilySelector` for the Params, attributes and notes.\n    ")
    return type(class_name, (InformationFamilySelector,), {"__init__": __init__, "criterion": criterion,
                                                           "__doc__": doc, "_choices": (), "__module__": __name__})


MRMRSelector = _named_criterion("mrmr", "MRMRSelector", "mRMR (Peng, Long & Ding 2005): relevance against mean "
                                "redundancy (MID, or MIQ with mrmr_form='quotient').")
JMISelector = _named_criterion("jmi", "JMISelector", "JMI (Yang & Moody 1999): the sum of joint informations.")
CMIMSelector = _named_criterion("cmim", "CMIMSelector", "CMIM (Fleuret 2004): the minimum conditional information.")
