"""Bad input over the Python API and data files: one table, one case per row.

Every case asserts the exception type (or the warning), a message fragment
naming the argument (or the file and line) and the bad value; the loader cases
also assert that nothing on disk was written or changed.  The CLI/config cases
live in their own module.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import lightgbm as lgb
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from ltr import LambdaMARTRanker
from ltr.datasets import from_frame, letor_layout, load_letor, load_letor_files
from ltr.engines import train
from ltr.inspection import permutation_importance
from ltr.metrics import dcg, idcg, ndcg
from ltr.metrics.composite import composite_ndcg
from ltr.objectives import CompositeLambdaRankObjective, LambdaRankObjective

BIG = 10**30
I32 = 2**31 - 1

# --------------------------------------------------------------------------- data


def _small(n_q: int = 20, n_docs: int = 10, seed: int = 0) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_q * n_docs, 3))
    y = rng.integers(0, 3, n_q * n_docs).astype(float)
    qid = np.repeat(np.arange(n_q), n_docs)
    offsets = np.arange(0, n_q * n_docs + 1, n_docs, dtype=np.int64)
    return X, y, qid, offsets


X, Y, QID, OFFSETS = _small()
N = len(Y)
X_INF = X.copy()
X_INF[7, 1] = np.inf
X_NEG_INF = X.copy()
X_NEG_INF[3, 2] = -np.inf


def _fitted() -> LambdaMARTRanker:
    return LambdaMARTRanker(n_estimators=2, min_child_samples=1).fit(X, Y, qid=QID)


def _train(**kw: Any) -> Any:
    args: dict[str, Any] = dict(engine="lightgbm", num_boost_round=2)
    args.update(kw)
    Xa = args.pop("X", X)
    ya = args.pop("y", Y)
    off = args.pop("offsets", OFFSETS)
    return train(Xa, ya, off, **args)


# --------------------------------------------------------------------------- API cases


class Case(NamedTuple):
    call: Callable[[], Any]
    exc: type[BaseException]
    match: str


API_CASES: dict[str, Case] = {
    # 1. exp2 gain overflow names the label value and its index
    "ndcg-exp2-overflow": Case(
        lambda: ndcg([0, 2000, 1], [1, 2, 3], group=[3]),
        ValueError, r"y_true\[1\] = 2000\.0 is too large for gain 'exp2'.*overflows",
    ),
    "dcg-exp2-overflow": Case(
        lambda: dcg([1024, 0], [1, 2], group=[2]),
        ValueError, r"y_true\[0\] = 1024\.0 is too large for gain 'exp2'",
    ),
    "idcg-exp2-overflow": Case(
        lambda: idcg([0, 0, 5000], group=[3]),
        ValueError, r"y_true\[2\] = 5000\.0 is too large",
    ),
    "composite-exp2-overflow": Case(
        lambda: composite_ndcg({"w": [2000, 0]}, [1, 2], weights={"w": 1.0}, group=[2]),
        ValueError, r"labels\['w'\]\[0\] = 2000\.0 is too large for gain 'exp2'",
    ),
    "objective-exp2-overflow": Case(
        lambda: LambdaRankObjective().gradients(np.zeros(2), [0.0, 2000.0], [0, 2]),
        ValueError, r"labels\[1\] = 2000\.0 is too large for gain 'exp2'",
    ),
    "composite-objective-exp2-overflow": Case(
        lambda: CompositeLambdaRankObjective({"w": 1.0}, {"w": [0.0, 3000.0]}),
        ValueError, r"labels\['w'\]\[1\] = 3000\.0 is too large",
    ),
    # 2. conventions enforce their peer's label rules, naming the convention
    "lightgbm-label-beyond-table": Case(
        lambda: ndcg([0, 31], [1, 2], group=[2], convention="lightgbm"),
        ValueError, r"convention='lightgbm' needs labels below the gain table's length 31.*"
                    r"y_true\[1\] = 31\.0",
    ),
    "lightgbm-fractional-label": Case(
        lambda: ndcg([0, 1.5], [1, 2], group=[2], convention="lightgbm"),
        ValueError, r"convention='lightgbm' needs integer labels.*y_true\[1\] = 1\.5",
    ),
    "lightgbm-short-table": Case(
        lambda: ndcg([0, 3], [1, 2], group=[2], convention="lightgbm", gain=[0, 1, 3]),
        ValueError, r"convention='lightgbm' needs labels below the gain table's length 3",
    ),
    "lightgbm-negative": Case(
        lambda: ndcg([0, -1], [1, 2], group=[2], convention="lightgbm"),
        ValueError, r"convention='lightgbm' refuses negative labels.*y_true\[1\] = -1\.0",
    ),
    "sklearn-negative": Case(
        lambda: ndcg([-2, 1], [1, 2], group=[2], convention="sklearn"),
        ValueError, r"convention='sklearn' refuses negative labels \(as scikit-learn.*-2\.0",
    ),
    "xgboost-exp2-above-31": Case(
        lambda: ndcg([0, 32], [1, 2], group=[2], convention="xgboost"),
        ValueError, r"convention='xgboost' with exp2 gain needs labels <= 31.*y_true\[1\] = 32\.0",
    ),
    "default-linear-negative": Case(
        lambda: ndcg([1, -1], [1, 2], group=[2], gain="linear"),
        ValueError, r"y_true must be >= 0.*y_true\[1\] = -1\.0",
    ),
    # 3. k and counts beyond int64 / int32
    "ndcg-k-beyond-int64": Case(
        lambda: ndcg([0, 1], [1, 2], group=[2], k=BIG),
        ValueError, rf"k must be <= {2**63 - 1}, got {BIG}",
    ),
    "ndcg-k-list-beyond-int64": Case(
        lambda: ndcg([0, 1], [1, 2], group=[2], k=[5, BIG]),
        ValueError, r"k\[1\] must be <= ",
    ),
    "objective-k-beyond-int32": Case(
        lambda: LambdaRankObjective(k=2**31), ValueError, rf"k must be <= {I32}, got {2**31}",
    ),
    "train-k-beyond-int32": Case(
        lambda: _train(k=BIG), ValueError, rf"k must be <= {I32}, got {BIG}",
    ),
    "train-rounds-beyond-int32": Case(
        lambda: _train(num_boost_round=BIG), ValueError, rf"num_boost_round must be <= {I32}",
    ),
    "train-early-stopping-beyond-int32": Case(
        lambda: _train(early_stopping_rounds=2**31, eval_sets=[("v", X, Y, OFFSETS)]),
        ValueError, rf"early_stopping_rounds must be <= {I32}, got {2**31}",
    ),
    "train-eval-at-beyond-int32": Case(
        lambda: _train(eval_at=[10, BIG]), ValueError, rf"eval_at\[1\] must be <= {I32}",
    ),
    "estimator-k-beyond-int32": Case(
        lambda: LambdaMARTRanker(k=BIG).fit(X, Y, qid=QID),
        ValueError, r"'k' parameter of LambdaMARTRanker .*\[1, 2147483647\]",
    ),
    "estimator-n-estimators-beyond-int32": Case(
        lambda: LambdaMARTRanker(n_estimators=BIG).fit(X, Y, qid=QID),
        ValueError, r"'n_estimators' parameter .*\[1, 2147483647\]. Got 1000",
    ),
    "estimator-early-stopping-beyond-int32": Case(
        lambda: LambdaMARTRanker(early_stopping_rounds=2**31).fit(X, Y, qid=QID),
        ValueError, r"'early_stopping_rounds' parameter .*2147483647",
    ),
    "importance-k-beyond-int64": Case(
        lambda: permutation_importance(lambda Z: Z[:, 0], X, Y, qid=QID, k=BIG),
        ValueError, r"k must be <= ",
    ),
    # 4. non-contiguous qid: advice depends on the caller (ndcg has no sort=)
    "ndcg-qid-restart": Case(
        lambda: ndcg([0, 1, 1], [1, 2, 3], qid=[7, 8, 7]),
        ValueError, r"qid is not contiguous: query 7 appears at row 0 and again at row 2.*"
                    r"sort your rows by qid \(stable\) first\.$",
    ),
    "composite-qid-restart": Case(
        lambda: composite_ndcg({"w": [0, 1, 1]}, [1, 2, 3], weights={"w": 1.0}, qid=[1, 2, 1]),
        ValueError, r"query 1 appears at row 0 .*by qid \(stable\) first\.$",
    ),
    "from-frame-qid-restart-csv": Case(
        lambda: from_frame(
            pd.DataFrame({"qid": [1, 1, 2, 2, 1, 1], "label": [0, 1] * 3, "x": range(6)}),
            source="file.csv",
        ),
        ValueError, r"^'file.csv': qid is not contiguous: query 1 appears at row 0 \(line 2\) "
                    r"and again at row 4 \(line 6\).*or pass sort=True",
    ),
    "from-frame-qid-restart-parquet": Case(
        lambda: from_frame(
            pd.DataFrame({"qid": [1, 2, 1], "label": [0, 1, 0], "x": range(3)}),
            source="part.parquet",
        ),
        ValueError, r"^'part.parquet': .*query 1 appears at row 0 and again at row 2 after",
    ),
    "from-frame-missing-label-names-source": Case(
        lambda: from_frame(pd.DataFrame({"qid": [1], "x": [0.0]}), source="t.csv"),
        ValueError, r"^'t.csv': label column 'label' not found",
    ),
    # 6. estimator input errors name the argument
    "estimator-word-labels": Case(
        lambda: LambdaMARTRanker(n_estimators=2).fit(X, ["a", "b"] * (N // 2), qid=QID),
        ValueError, r"y must hold numeric relevance labels.*y\[0\] = 'a' is not a number",
    ),
    "estimator-eval-set-word-labels": Case(
        lambda: LambdaMARTRanker(n_estimators=2).fit(
            X, Y, qid=QID, eval_set=[(X, ["bad"] * N)], eval_qid=[QID]
        ),
        ValueError, r"eval_set\[0\] y\[0\] = 'bad' is not a number",
    ),
    "estimator-score-word-labels": Case(
        lambda: _fitted().score(X, ["x"] * N, qid=QID),
        ValueError, r"y\[0\] = 'x' is not a number",
    ),
    "importance-max-queries-beyond": Case(
        lambda: permutation_importance(
            lambda Z: Z[:, 0], X[:20], Y[:20], qid=QID[:20], max_queries=3
        ),
        ValueError, r"max_queries=3 is more than the 2 queries in the data",
    ),
    # 8. one NaN/inf feature rule: inf names the column
    "train-inf-feature": Case(
        lambda: _train(X=X_INF, feature_names=["a", "b", "c"]),
        ValueError, r"X has an infinite value inf in column 1 \('b'\), row 7",
    ),
    "train-neg-inf-feature": Case(
        lambda: _train(X=X_NEG_INF), ValueError, r"X has an infinite value -inf in column 2, row 3",
    ),
    "train-sparse-inf-feature": Case(
        lambda: _train(X=sp.csr_matrix(X_INF)), ValueError, r"inf in column 1, row 7",
    ),
    "train-eval-set-inf-feature": Case(
        lambda: _train(eval_sets=[("v", X_INF, Y, OFFSETS)]),
        ValueError, r"eval_sets\[0\] X has an infinite value inf in column 1",
    ),
    "estimator-inf-feature-frame": Case(
        lambda: LambdaMARTRanker(n_estimators=2).fit(
            pd.DataFrame(X_INF, columns=["a", "b", "c"]), Y, qid=QID
        ),
        ValueError, r"X has an infinite value inf in column 1 \('b'\), row 7",
    ),
    "estimator-predict-inf-feature": Case(
        lambda: _fitted().predict(X_NEG_INF), ValueError, r"-inf in column 2, row 3",
    ),
    # 9. the objective meets LightGBM without groups
    "objective-dataset-without-group": Case(
        lambda: lgb.train(
            {"objective": LambdaRankObjective(), "verbose": -1}, lgb.Dataset(X, Y),
            num_boost_round=1,
        ),
        ValueError, r"no query groups: set group= on it.*folds=GroupKFold",
    ),
}


@pytest.mark.parametrize("case", list(API_CASES.values()), ids=list(API_CASES))
def test_api_rejects_bad_input_with_informative_errors(case: Case) -> None:
    with pytest.raises(case.exc, match=case.match):
        case.call()


def test_advice_without_sort_argument_never_mentions_sort_true() -> None:
    with pytest.raises(ValueError) as info:
        ndcg([0, 1, 1], [1, 2, 3], qid=[1, 2, 1])
    assert "sort=True" not in str(info.value)


# --------------------------------------------------------------------------- warnings

WARN_CASES: dict[str, tuple[Callable[[], Any], str]] = {
    "train-all-zero-labels": (
        lambda: _train(y=np.zeros(N)), r"every label is 0.*model will be constant",
    ),
    "train-single-document-queries": (
        lambda: _train(offsets=np.arange(N + 1)),
        r"every query has one document \(200 queries\).*constant",
    ),
    "train-constant-label-per-query": (
        lambda: _train(y=QID.astype(float)),
        r"no query has two documents with different labels",
    ),
    "estimator-all-zero-labels": (
        lambda: LambdaMARTRanker(n_estimators=2).fit(X, np.zeros(N), qid=QID),
        r"nothing can be learned: every label is 0",
    ),
    "objective-bagging-by-query": (
        lambda: lgb.train(
            {"objective": LambdaRankObjective(), "verbose": -1, "bagging_by_query": True,
             "bagging_fraction": 0.5, "bagging_freq": 1},
            lgb.Dataset(X, Y, group=[10] * 20), num_boost_round=2,
        ),
        r"bagging_by_query=True with a custom objective.*constant",
    ),
}


@pytest.mark.parametrize("call, match", list(WARN_CASES.values()), ids=list(WARN_CASES))
def test_nothing_to_learn_warns_and_still_trains(call: Callable[[], Any], match: str) -> None:
    with pytest.warns(UserWarning, match=match):
        call()


def test_learnable_data_does_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        _train()


def test_lightgbm_cv_row_folds_with_custom_objective_are_refused() -> None:
    from sklearn.model_selection import GroupKFold

    with pytest.raises(ValueError, match=r"subset that cuts query .*folds=GroupKFold"):
        lgb.cv({"objective": LambdaRankObjective(), "verbose": -1},
               lgb.Dataset(X, Y, group=[10] * 20), num_boost_round=1, nfold=2)
    result = lgb.cv({"objective": LambdaRankObjective(), "verbose": -1, "metric": "ndcg"},
                    lgb.Dataset(X, Y, group=[10] * 20), num_boost_round=1,
                    folds=GroupKFold(2).split(X, groups=QID))
    assert result


# --------------------------------------------------------------------------- data files

FILE_CASES: dict[str, tuple[dict[str, str], Callable[[Path], Any], str]] = {
    "letor-bad-value": (
        {"bad.txt": "1 qid:1 1:1\n0 qid:1 2:abc\n"},
        lambda d: load_letor(d / "bad.txt"),
        r"bad.txt' as a LibSVM/LETOR file: line 2: token '2:abc': value 'abc' is not a number",
    ),
    "letor-bad-label": (
        {"bad.txt": "# header\nx qid:1 1:1\n"},
        lambda d: load_letor(d / "bad.txt"),
        r"bad.txt'.*line 2: label 'x' is not a number",
    ),
    "letor-token-without-colon": (
        {"bad.txt": "1 qid:1 1:1 junk\n"},
        lambda d: load_letor(d / "bad.txt"),
        r"line 1: token 'junk' is not '<index>:<value>'",
    ),
    "letor-decreasing-indices": (
        {"bad.txt": "1 qid:1 1:1\n1 qid:1 3:1 2:1\n"},
        lambda d: load_letor(d / "bad.txt"),
        r"line 2: token '2:1': feature indices must increase",
    ),
    "letor-absurd-index": (
        {"big.txt": "1 qid:1 1:1\n\n0 qid:1 999999999:1\n"},
        lambda d: load_letor(d / "big.txt"),
        r"big.txt' line 3 has feature index 999999999, beyond 1048576 dense columns",
    ),
    "letor-index-beyond-n-features": (
        {"big.txt": "1 qid:1 1:1\n0 qid:1 7:1\n"},
        lambda d: load_letor(d / "big.txt", n_features=5),
        r"big.txt' line 2 has feature index 7 but n_features=5",
    ),
    "letor-qid-restart": (
        {"r.txt": "1 qid:1 1:1\n0 qid:2 1:2\n# comment\n1 qid:1 1:3\n"},
        lambda d: load_letor(d / "r.txt"),
        (
            r"r.txt': qid is not contiguous: query 1 appears at row 0 \(line 1\) and again at "
            r"row 2 \(line 4\).*or pass sort=True"
        ),
    ),
    "letor-zero-index-but-one-based": (
        {"z.txt": "1 qid:1 1:1\n0 qid:1 0:1\n"},
        lambda d: load_letor(d / "z.txt", zero_based=False),
        r"z.txt' line 2 uses feature index 0 but zero_based=False",
    ),
    "letor-files-one-bad-file": (
        {"tr.txt": "1 qid:1 0:1\n", "te.txt": "1 qid:1 1:1\n0 qid:1 5:x\n"},
        lambda d: load_letor_files({"train": d / "tr.txt", "test": d / "te.txt"}),
        r"te.txt' as a LibSVM/LETOR file: line 2: token '5:x'",
    ),
    "letor-files-query-files-mismatch": (
        {"tr.txt": "1 qid:1 1:1\n"},
        lambda d: load_letor_files([d / "tr.txt"], query_files=[None, None]),
        r"query_files has 2 entries but paths has 1",
    ),
    "letor-layout-absurd-index": (
        {"tr.txt": "1 qid:1 1:1\n", "te.txt": "1 qid:1 2000000:1\n"},
        lambda d: letor_layout([d / "tr.txt", d / "te.txt"]),
        r"te.txt' line 1 has feature index 2000000",
    ),
    "csv-qid-restart-names-line": (
        {"t.csv": "qid,label,x\n1,0,0.1\n1,1,0.2\n2,0,0.3\n1,1,0.4\n"},
        lambda d: from_frame(pd.read_csv(d / "t.csv"), source=d / "t.csv"),
        (
            r"t.csv': qid is not contiguous: query 1 appears at row 0 \(line 2\) and again at "
            r"row 3 \(line 5\)"
        ),
    ),
}


def _snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(folder.iterdir())}


@pytest.mark.parametrize(
    "files, call, match", list(FILE_CASES.values()), ids=list(FILE_CASES)
)
def test_data_files_reject_bad_input_naming_file_and_line_and_change_nothing(
    tmp_path: Path, files: dict[str, str], call: Callable[[Path], Any], match: str
) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    before = _snapshot(tmp_path)
    with pytest.raises(ValueError, match=match):
        call(tmp_path)
    assert _snapshot(tmp_path) == before


def test_letor_files_of_one_run_share_the_feature_base_and_count(tmp_path: Path) -> None:
    # train is 0-based (index 0 occurs), test only uses 1..2: one base for both
    (tmp_path / "tr.txt").write_text("1 qid:1 0:1 1:2\n0 qid:1 0:3 1:4\n")
    (tmp_path / "te.txt").write_text("1 qid:1 1:5 2:6\n")
    sets = load_letor_files({"train": tmp_path / "tr.txt", "test": tmp_path / "te.txt"})
    assert letor_layout([tmp_path / "tr.txt", tmp_path / "te.txt"]) == (True, 3)
    assert sets["train"].feature_names == sets["test"].feature_names == ["f0", "f1", "f2"]
    np.testing.assert_array_equal(sets["test"].X, [[0.0, 5.0, 6.0]])
    # per file, the test file alone would be read 1-based with shifted columns
    alone = load_letor(tmp_path / "te.txt")
    assert alone.feature_names == ["f1", "f2"]
    # explicit values still apply to every file
    explicit = load_letor_files([tmp_path / "te.txt"], zero_based=True, n_features=4)
    assert explicit[0].X.shape == (1, 4)



@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("1 qid:1 1:0.5 2:inf\n0 qid:1 1:0.2 2:0.1\n", "line 1: a feature value is inf"),
        ("# comment\n1 qid:1 1:0.5 2:1\n-2 qid:1 1:0.2 2:0.1\n", "line 3: the label is -2.0"),
        ("1 qid:1 1:0.5 99999999999999:1\n0 qid:1 1:0.2\n",
         "line 1: token '99999999999999:1': feature index 99999999999999 is beyond"),
        ("0 qid:1 1:0.5\n1 qid:99999999999999999999999 1:0.5\n",
         "line 2: token 'qid:99999999999999999999999': qid does not fit in 64 bits"),
    ],
    ids=["inf-feature", "negative-label", "huge-index", "huge-qid"],
)
def test_letor_values_that_cannot_be_used_name_the_file_line(tmp_path, text, fragment):
    path = tmp_path / "bad.letor"
    path.write_text(text)
    with pytest.raises(ValueError, match=re.escape(fragment)) as info:
        load_letor(path)
    assert "bad.letor" in str(info.value)
