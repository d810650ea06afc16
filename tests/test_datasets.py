"""Tests for ltr.datasets: RankingData, LETOR/pandas loaders and the synthetic generator."""

from __future__ import annotations

import dataclasses
import doctest
import pickle
from pathlib import Path

import lightgbm as lgb
import numpy as np
import pandas as pd
import pytest

import ltr.datasets
import ltr.datasets._container
import ltr.datasets._frame
import ltr.datasets._letor
import ltr.synthetic
from ltr.datasets import RankingData, from_frame, load_letor, read_table
from ltr.synthetic import make_ranking
from ltr.testing import naive_parse_letor

# ---------------------------------------------------------------------------
# Independent references
# ---------------------------------------------------------------------------


def naive_ndcg_at_10(y: np.ndarray, score: np.ndarray, offsets: np.ndarray) -> float:
    """Mean exp2-gain nDCG@10 over queries with at least one relevant document."""
    values = []
    for q in range(len(offsets) - 1):
        lab = y[offsets[q] : offsets[q + 1]]
        if lab.max() == 0:
            continue
        gains = 2.0**lab - 1.0
        top = np.argsort(-score[offsets[q] : offsets[q + 1]], kind="stable")[:10]
        discount = 1.0 / np.log2(np.arange(2, 12))
        dcg = float((gains[top] * discount[: top.size]).sum())
        ideal = np.sort(gains)[::-1][:10]
        values.append(dcg / float((ideal * discount[: ideal.size]).sum()))
    return float(np.mean(values))


def write_letor(
    path: Path, X: np.ndarray, y: np.ndarray, qid: np.ndarray | None, *, base: int = 1
) -> None:
    lines = []
    for i in range(X.shape[0]):
        parts = [repr(float(y[i]))]
        if qid is not None:
            parts.append(f"qid:{int(qid[i])}")
        parts += [f"{j + base}:{float(X[i, j])!r}" for j in np.flatnonzero(X[i])]
        lines.append(" ".join(parts) + f" # doc{i}")
    path.write_text("\n".join(lines) + "\n")


def small_data(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    sizes = np.array([3, 1, 4, 2, 5])
    qid = np.repeat(np.array([7, 3, 11, 5, 2]), sizes)
    X = np.round(rng.normal(size=(sizes.sum(), 6)), 4)
    X[rng.random(X.shape) < 0.3] = 0.0
    y = rng.integers(0, 5, size=sizes.sum()).astype(float)
    return X, y, qid


# ---------------------------------------------------------------------------
# RankingData
# ---------------------------------------------------------------------------


def test_ranking_data_exposes_offsets_and_shape():
    X, y, qid = small_data()
    data = RankingData(X=X, y=y, qid=qid)
    np.testing.assert_array_equal(data.offsets, [0, 3, 4, 8, 10, 15])
    assert data.offsets.dtype == np.int64
    assert (data.n_queries, data.n_rows, data.n_features) == (5, 15, 6)
    np.testing.assert_array_equal(data.group, [3, 1, 4, 2, 5])
    assert data.feature_names == [f"f{j}" for j in range(1, 7)]
    assert data.qid.dtype == np.int64 and data.y.dtype == np.float64
    assert data.labels == {} and data.segments is None
    assert "n_queries=5" in repr(data)
    assert [f.name for f in dataclasses.fields(data)] == [
        "X",
        "y",
        "qid",
        "feature_names",
        "labels",
        "segments",
        "position",
        "click",
        "doc",
        "propensity",
    ]


def test_ranking_data_converts_integer_inputs():
    data = RankingData(X=np.ones((2, 2), dtype=np.int32), y=[1, 0], qid=np.array([4.0, 4.0]))
    assert data.X.dtype == np.float64
    np.testing.assert_array_equal(data.qid, [4, 4])
    assert data.qid.dtype == np.int64


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"X": np.zeros(3)}, ValueError, r"X must be 2-D.*shape \(3,\)"),
        ({"X": np.zeros((0, 2)), "y": [], "qid": []}, ValueError, "X has no rows"),
        ({"X": np.array([["a", "b"]] * 3)}, TypeError, "X must hold numbers"),
        ({"y": [1.0, 2.0]}, ValueError, "y has 2 rows but X has 3"),
        ({"y": [1.0, np.nan, 0.0]}, ValueError, "y must be finite"),
        ({"qid": [1, 1]}, ValueError, "qid has 2 rows but X has 3"),
        ({"qid": [1, 2, 1]}, ValueError, "qid is not contiguous"),
        ({"qid": ["a", "a", "b"]}, TypeError, "qid must hold integer query ids"),
        ({"qid": [[1, 1, 2]]}, ValueError, "qid must be 1-D"),
        ({"feature_names": ["a"]}, ValueError, "feature_names has 1 entries but X has 2"),
        ({"feature_names": ["a", "a"]}, ValueError, "'a' appears more than once"),
        ({"feature_names": ["a", 2]}, TypeError, r"feature_names\[1\] must be a str"),
        ({"feature_names": "ab"}, TypeError, "feature_names must be a list"),
        ({"labels": {"watch": [1.0]}}, ValueError, r"labels\['watch'\] has 1 rows but X has 3"),
        ({"labels": {"watch": [1.0, np.inf, 0]}}, ValueError, r"labels\['watch'\] must be finite"),
        ({"labels": {1: [1.0, 1.0, 0]}}, TypeError, "labels keys must be non-empty str"),
        ({"labels": [1, 2]}, TypeError, "labels must be a dict"),
        ({"segments": ["a"]}, ValueError, "segments has 1 rows but X has 3"),
        ({"segments": [["a"], ["b"], ["c"]]}, ValueError, "segments must be 1-D"),
    ],
)
def test_ranking_data_rejects_bad_fields_with_informative_errors(kwargs, error, match):
    fields = {"X": np.zeros((3, 2)), "y": [0.0, 1.0, 2.0], "qid": [1, 1, 2]}
    fields.update(kwargs)
    with pytest.raises(error, match=match):
        RankingData(**fields)


def test_ranking_data_is_immutable_and_replace_revalidates():
    X, y, qid = small_data()
    data = RankingData(X=X, y=y, qid=qid)
    with pytest.raises(dataclasses.FrozenInstanceError):
        data.y = y  # type: ignore[misc]
    doubled = dataclasses.replace(data, y=2 * y)
    np.testing.assert_array_equal(doubled.y, 2 * y)
    np.testing.assert_array_equal(doubled.offsets, data.offsets)
    with pytest.raises(ValueError, match="y has 2 rows"):
        dataclasses.replace(data, y=[1.0, 2.0])


def test_ranking_data_pickles():
    data = make_ranking(5, n_features=4, mean_docs=6, objectives=("a",), n_segments=2)
    back = pickle.loads(pickle.dumps(data))
    np.testing.assert_array_equal(back.X, data.X)
    np.testing.assert_array_equal(back.offsets, data.offsets)
    np.testing.assert_array_equal(back.labels["a"], data.labels["a"])


def test_subset_keeps_whole_queries_in_the_given_order():
    X, y, qid = small_data()
    data = RankingData(
        X=X,
        y=y,
        qid=qid,
        labels={"extra": y + 1},
        segments=np.repeat(list("abcde"), [3, 1, 4, 2, 5]),
    )
    part = data.subset([3, 0, 4])
    # naive reference: concatenate the rows of each chosen query
    rows = np.concatenate([np.arange(data.offsets[q], data.offsets[q + 1]) for q in (3, 0, 4)])
    np.testing.assert_array_equal(part.X, X[rows])
    np.testing.assert_array_equal(part.y, y[rows])
    np.testing.assert_array_equal(part.qid, [5, 5, 7, 7, 7, 2, 2, 2, 2, 2])
    np.testing.assert_array_equal(part.offsets, [0, 2, 5, 10])
    np.testing.assert_array_equal(part.labels["extra"], y[rows] + 1)
    np.testing.assert_array_equal(part.segments, list("ddaaaeeeee"))
    assert part.feature_names == data.feature_names and part.feature_names is not data.feature_names
    mask = np.array([False, True, False, True, False])
    np.testing.assert_array_equal(data.subset(mask).qid, [3, 5, 5])
    np.testing.assert_array_equal(data.subset(np.array([2], dtype=np.uint8)).qid, [11] * 4)


@pytest.mark.parametrize(
    ("indices", "error", "match"),
    [
        ([], ValueError, "query_indices is empty"),
        ([0, 5], ValueError, r"query_indices must be in \[0, 5\), got 5"),
        ([-1], ValueError, r"must be in \[0, 5\), got -1"),
        ([1, 2, 1], ValueError, "query 1 is selected more than once"),
        ([0.0, 1.0], TypeError, "query_indices must hold integers"),
        ([[0, 1]], ValueError, "query_indices must be 1-D"),
        ([True, False], ValueError, "boolean query_indices mask must have n_queries=5"),
    ],
)
def test_subset_rejects_bad_indices(indices, error, match):
    data = RankingData(*small_data())
    with pytest.raises(error, match=match):
        data.subset(indices)


def test_to_frame_layout_and_name_clash():
    data = make_ranking(4, n_features=3, mean_docs=5, objectives=("watch", "share"), n_segments=2)
    df = data.to_frame()
    assert list(df.columns) == [
        "qid",
        "label",
        "label_watch",
        "label_share",
        "segment",
        "f1",
        "f2",
        "f3",
    ]
    np.testing.assert_array_equal(df["f2"].to_numpy(), data.X[:, 1])
    assert df["f1"].dtype == np.float32
    clash = RankingData(X=np.zeros((2, 1)), y=[0, 1], qid=[0, 0], feature_names=["label"])
    with pytest.raises(ValueError, match=r"feature names \['label'\] clash"):
        clash.to_frame()


# ---------------------------------------------------------------------------
# load_letor
# ---------------------------------------------------------------------------


# Facts about the two copies of LightGBM's examples/lambdarank files (see
# tests/data/lightgbm-lambdarank/README.md): rows, queries and label counts.
LETOR_FILES = {
    "full": {"train": (3005, 201, [645, 1211, 858, 222, 69]), "test": (768, 50)},
    "slice": {"train": (570, 40, [140, 256, 127, 37, 10]), "test": (168, 10)},
}


def test_load_letor_reads_the_real_lightgbm_example(letor_any_dir):
    folder = letor_any_dir.path
    (n_rows, n_queries, label_counts), (n_test_rows, n_test_queries) = (
        LETOR_FILES[letor_any_dir.name]["train"],
        LETOR_FILES[letor_any_dir.name]["test"],
    )
    train = load_letor(folder / "rank.train")
    assert train.X.shape == (n_rows, 300)
    assert train.n_queries == n_queries
    np.testing.assert_array_equal(np.bincount(train.y.astype(int)), label_counts)
    sizes = np.loadtxt(folder / "rank.train.query", dtype=np.int64)
    np.testing.assert_array_equal(train.group, sizes)
    np.testing.assert_array_equal(train.qid, np.repeat(np.arange(n_queries), sizes))
    assert train.feature_names[0] == "f1" and train.feature_names[-1] == "f300"
    X_ref, y_ref, qid_ref = naive_parse_letor(folder / "rank.train", 300)
    assert qid_ref is None
    np.testing.assert_array_equal(train.X, X_ref)
    np.testing.assert_array_equal(train.y, y_ref)

    test = load_letor(
        str(folder / "rank.test"),
        folder / "rank.test.query",
        n_features=300,
        dtype=np.float32,
    )
    assert test.X.shape == (n_test_rows, 300) and test.X.dtype == np.float32
    assert test.n_queries == n_test_queries


def test_committed_slice_is_the_head_of_the_full_set(letor_slice_dir, letor_set):
    """The slice's rows are the first rows of the full files, unchanged (when both exist)."""
    for name in ("rank.train", "rank.train.query", "rank.test", "rank.test.query"):
        head = (letor_slice_dir / name).read_bytes()
        assert head.endswith(b"\n")
        assert (letor_set.path / name).read_bytes().startswith(head)
    assert (letor_slice_dir / "LICENSE").read_text().startswith("The MIT License")


def test_load_letor_round_trips_a_qid_file(tmp_path):
    X, y, qid = small_data()
    path = tmp_path / "data.letor"
    write_letor(path, X, y, qid)
    data = load_letor(path)
    X_ref, y_ref, qid_ref = naive_parse_letor(path, X.shape[1])
    # The last column may be all zero: the file then defines fewer features.
    width = data.n_features
    np.testing.assert_array_equal(data.X, X_ref[:, :width])
    assert not X_ref[:, width:].any()
    np.testing.assert_array_equal(data.y, y_ref)
    np.testing.assert_array_equal(data.qid, qid_ref)
    np.testing.assert_array_equal(data.offsets, [0, 3, 4, 8, 10, 15])
    padded = load_letor(path, n_features=9)
    assert padded.X.shape == (15, 9) and padded.feature_names[-1] == "f9"
    np.testing.assert_array_equal(padded.X[:, :6], X)
    assert not padded.X[:, 6:].any()


def test_load_letor_query_file_overrides_qid_and_is_found_next_to_the_data(tmp_path):
    X, y, qid = small_data()
    with_qid = tmp_path / "a.txt"
    write_letor(with_qid, X, y, qid)
    sizes_file = tmp_path / "sizes.txt"
    sizes_file.write_text("10\n5\n")
    data = load_letor(with_qid, sizes_file)
    np.testing.assert_array_equal(data.offsets, [0, 10, 15])
    np.testing.assert_array_equal(data.qid, [0] * 10 + [1] * 5)

    without = tmp_path / "b.txt"
    write_letor(without, X, y, None)
    (tmp_path / "b.txt.query").write_text("3\n1\n4\n2\n5\n")
    auto = load_letor(without, n_features=6)
    np.testing.assert_array_equal(auto.offsets, [0, 3, 4, 8, 10, 15])
    np.testing.assert_array_equal(auto.X, X)


def test_load_letor_zero_based_file_names_columns_from_f0(tmp_path):
    X, y, qid = small_data()
    X[0, 0] = 1.5  # make sure index 0 occurs
    path = tmp_path / "zero.txt"
    write_letor(path, X, y, qid, base=0)
    data = load_letor(path, n_features=6)
    np.testing.assert_array_equal(data.X, X)
    assert data.feature_names[:2] == ["f0", "f1"]
    forced = load_letor(path, n_features=7, zero_based=True)
    np.testing.assert_array_equal(forced.X[:, :6], X)


def test_load_letor_sorts_non_contiguous_qid_on_request(tmp_path):
    X, y, _ = small_data()
    qid = np.array([1, 1, 2, 2, 1, 3, 3, 2, 1, 3, 3, 3, 2, 2, 1])
    path = tmp_path / "mixed.txt"
    write_letor(path, X, y, qid)
    with pytest.raises(ValueError, match=r"mixed.txt.*qid is not contiguous.*sort=True"):
        load_letor(path)
    data = load_letor(path, n_features=6, sort=True)
    order = np.argsort(qid, kind="stable")  # first appearance order is 1, 2, 3 here
    np.testing.assert_array_equal(data.qid, qid[order])
    np.testing.assert_array_equal(data.X, X[order])
    np.testing.assert_array_equal(data.y, y[order])


def test_load_letor_rejects_bad_input_with_informative_errors(tmp_path):
    X, y, qid = small_data()
    good = tmp_path / "good.txt"
    write_letor(good, X, y, qid)
    no_qid = tmp_path / "noqid.txt"
    write_letor(no_qid, X, y, None)

    with pytest.raises(FileNotFoundError, match="missing.txt"):
        load_letor(tmp_path / "missing.txt")
    with pytest.raises(FileNotFoundError, match="query_file .*nope.query"):
        load_letor(good, tmp_path / "nope.query")
    with pytest.raises(ValueError, match=r"no 'qid:' fields and no query file .*noqid.txt.query"):
        load_letor(no_qid)
    bad_sum = tmp_path / "bad.query"
    bad_sum.write_text("3\n3\n")
    with pytest.raises(
        ValueError, match=r"group sizes in .*bad.query' sum to 6 but .* has 15 rows"
    ):
        load_letor(no_qid, bad_sum)
    not_ints = tmp_path / "text.query"
    not_ints.write_text("3\nabc\n")
    with pytest.raises(ValueError, match="one integer group size per line"):
        load_letor(no_qid, not_ints)
    zero_size = tmp_path / "zero.query"
    zero_size.write_text("15\n0\n")
    with pytest.raises(ValueError, match=r"zero.query.*group sizes must be >= 1"):
        load_letor(no_qid, zero_size)
    empty_query = tmp_path / "empty.query"
    empty_query.write_text("")
    with pytest.raises(ValueError, match="empty.query.*group is empty"):
        load_letor(no_qid, empty_query)
    partial = tmp_path / "partial.txt"
    partial.write_text("1 qid:1 1:0.5\n0 2:1\n")
    with pytest.raises(ValueError, match="only 1 of the 2 rows .* carry a 'qid:' field"):
        load_letor(partial)
    garbage = tmp_path / "garbage.txt"
    garbage.write_text("this is not libsvm\n")
    with pytest.raises(ValueError, match="could not parse .*garbage.txt"):
        load_letor(garbage)
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    with pytest.raises(ValueError, match="contains no data rows"):
        load_letor(empty)
    with pytest.raises(ValueError, match=r"has feature index 6 but n_features=4"):
        load_letor(good, n_features=4)
    with pytest.raises(ValueError, match="n_features must be >= 1, got 0"):
        load_letor(good, n_features=0)
    with pytest.raises(ValueError, match="dtype must be float32 or float64"):
        load_letor(good, dtype=np.int32)
    with pytest.raises(ValueError, match="zero_based must be True, False or 'auto', got 'yes'"):
        load_letor(good, zero_based="yes")
    zero = tmp_path / "zero.txt"
    zero.write_text("1 qid:1 0:0.5\n")
    with pytest.raises(ValueError, match="uses feature index 0 but zero_based=False"):
        load_letor(zero, zero_based=False)
    with pytest.raises(TypeError, match="path must be a str or path-like"):
        load_letor(3.5)


# ---------------------------------------------------------------------------
# from_frame / read_table
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".tsv"])
def test_from_frame_round_trips_through_files(tmp_path, suffix):
    data = make_ranking(6, n_features=5, mean_docs=8, objectives=("watch", "share"), n_segments=3)
    df = data.to_frame()
    path = tmp_path / f"data{suffix}"
    if suffix == ".parquet":
        df.to_parquet(path)
    else:
        df.to_csv(path, index=False, sep="\t" if suffix == ".tsv" else ",")
    back = from_frame(
        read_table(path),
        label="label",
        qid="qid",
        labels={"watch": "label_watch", "share": "label_share"},
        segment="segment",
        dtype=np.float32,
    )
    np.testing.assert_array_equal(back.X, data.X)  # float32 shortest repr round-trips
    assert back.X.dtype == np.float32
    np.testing.assert_array_equal(back.y, data.y)
    np.testing.assert_array_equal(back.qid, data.qid)
    assert back.feature_names == data.feature_names
    assert list(back.labels) == ["watch", "share"]
    for key in back.labels:
        np.testing.assert_array_equal(back.labels[key], data.labels[key])
    np.testing.assert_array_equal(back.segments.astype(str), data.segments)


def test_from_frame_selects_features_and_maps_string_qids():
    df = pd.DataFrame(
        {
            "query": ["q9", "q9", "a", "a", "a", "zz"],
            "rel": [1, 0, 2, 0, 1, 3],
            "bm25": [1.5, 0.2, 3.0, 0.1, 0.0, 2.0],
            "clicks": [3, 0, 1, 1, 0, 7],
            "flag": [True, False, True, True, False, False],
            "market": ["us", "us", "de", "de", "de", "fr"],
        }
    )
    data = from_frame(df, label="rel", qid="query", features=["clicks", "bm25"], segment="market")
    assert data.feature_names == ["clicks", "bm25"]
    np.testing.assert_array_equal(data.X, df[["clicks", "bm25"]].to_numpy(dtype=float))
    np.testing.assert_array_equal(data.qid, [0, 0, 1, 1, 1, 2])
    np.testing.assert_array_equal(data.y, [1, 0, 2, 0, 1, 3])
    np.testing.assert_array_equal(data.segments, df["market"].to_numpy())
    default = from_frame(df.drop(columns="market"), label="rel", qid="query")
    assert default.feature_names == ["bm25", "clicks", "flag"]
    int_ids = from_frame(
        df.assign(query=[40, 40, 2, 2, 2, 9]).drop(columns="market"), "rel", "query"
    )
    np.testing.assert_array_equal(int_ids.qid, [40, 40, 2, 2, 2, 9])
    float_ids = from_frame(
        df.assign(query=[4.0, 4.0, 2.0, 2.0, 2.0, 9.0]), "rel", "query", ["bm25"]
    )
    np.testing.assert_array_equal(float_ids.qid, [4, 4, 2, 2, 2, 9])
    nullable = from_frame(
        df.assign(query=pd.array([1, 1, 2, 2, 2, 3], dtype="Int64")), "rel", "query", ["bm25"]
    )
    np.testing.assert_array_equal(nullable.qid, [1, 1, 2, 2, 2, 3])
    fractional = from_frame(
        df.assign(query=[0.5, 0.5, 2.0, 2.0, 2.0, 9.0]), "rel", "query", ["bm25"]
    )
    np.testing.assert_array_equal(fractional.qid, [0, 0, 1, 1, 1, 2])


def test_from_frame_sorts_non_contiguous_queries_on_request():
    df = pd.DataFrame(
        {"qid": [5, 3, 5, 3, 8], "label": [1, 2, 3, 4, 0], "x": [0.1, 0.2, 0.3, 0.4, 0.5]}
    )
    with pytest.raises(
        ValueError,
        match=r"qid is not contiguous: query 5 .*sort your rows by qid \(stable\) first, "
        r"or pass sort=True"
    ):
        from_frame(df)
    data = from_frame(df, sort=True)
    np.testing.assert_array_equal(data.qid, [5, 5, 3, 3, 8])
    np.testing.assert_array_equal(data.y, [1, 3, 2, 4, 0])
    np.testing.assert_array_equal(data.X[:, 0], [0.1, 0.3, 0.2, 0.4, 0.5])
    strings = from_frame(df.assign(qid=df.qid.astype(str), s=list("abcde")), segment="s", sort=True)
    np.testing.assert_array_equal(strings.qid, [0, 0, 1, 1, 2])
    np.testing.assert_array_equal(strings.segments, list("acbde"))


def test_from_frame_rejects_bad_input_with_informative_errors():
    df = pd.DataFrame(
        {"qid": [1, 1, 2], "label": [0, 1, 2], "x": [0.1, 0.2, 0.3], "s": ["a", "b", "c"]}
    )
    cases = [
        (
            {"label": "grade"},
            ValueError,
            r"label column 'grade' not found.*available columns: \['qid', 'label', 'x', 's'\]",
        ),
        (
            {"qid": "query"},
            ValueError,
            r"qid column 'query' not found in the frame; available columns",
        ),
        ({"segment": "market"}, ValueError, r"segment column 'market' not found"),
        ({"labels": {"watch": "w"}}, ValueError, r"labels\['watch'\] column 'w' not found"),
        ({"features": ["x", "y"]}, ValueError, r"feature column 'y' not found"),
        ({"features": "x"}, TypeError, "features must be a list of column names"),
        ({"labels": ["w"]}, TypeError, "labels must map objective names to column names"),
        ({"dtype": np.int64}, ValueError, "dtype must be float32 or float64"),
        ({}, TypeError, r"feature columns must be numeric; \['s'\]"),
        ({"label": "s", "features": ["x"]}, TypeError, "label column 's' must be numeric"),
    ]
    for kwargs, error, match in cases:
        with pytest.raises(error, match=match):
            from_frame(df, **kwargs)
    with pytest.raises(ValueError, match=r"label column 'label' has 1 missing value"):
        from_frame(df.assign(label=[0, np.nan, 1]), segment="s")
    with pytest.raises(ValueError, match=r"qid column 'qid' has 1 missing value"):
        from_frame(df.assign(qid=[1, None, 2]), segment="s")
    with pytest.raises(ValueError, match=r"labels\['w'\] column 'x' must be finite"):
        from_frame(
            df.assign(x=[0.1, np.inf, 0.3]), features=["label"], labels={"w": "x"}, segment="s"
        )
    with pytest.raises(ValueError, match="no feature columns"):
        from_frame(df[["qid", "label"]])
    with pytest.raises(ValueError, match="df has no rows"):
        from_frame(df.iloc[:0])
    with pytest.raises(TypeError, match="df must be a pandas DataFrame, got dict"):
        from_frame({"qid": [1]})
    wide = pd.DataFrame({f"c{i}": [1] for i in range(30)})
    with pytest.raises(ValueError, match=r"'c19', \.\.\. \(10 more\)"):
        from_frame(wide)


def test_read_table_rejects_unknown_suffix_and_missing_file(tmp_path):
    other = tmp_path / "data.json"
    other.write_text("{}")
    with pytest.raises(ValueError, match=r"cannot tell the format of .*data.json.*suffix '.json'"):
        read_table(other)
    with pytest.raises(FileNotFoundError, match="nothere.csv"):
        read_table(tmp_path / "nothere.csv")
    gz = tmp_path / "t.csv.gz"
    pd.DataFrame({"a": [1, 2]}).to_csv(gz, index=False)
    assert read_table(gz)["a"].tolist() == [1, 2]


# ---------------------------------------------------------------------------
# make_ranking
# ---------------------------------------------------------------------------


def test_make_ranking_is_deterministic():
    kwargs = {"n_features": 12, "mean_docs": 30, "objectives": ("watch", "share"), "n_segments": 3}
    a = make_ranking(50, random_state=3, **kwargs)
    b = make_ranking(50, random_state=3, **kwargs)
    for field in ("X", "y", "qid", "segments"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    for key in a.labels:
        np.testing.assert_array_equal(a.labels[key], b.labels[key])
    c = make_ranking(50, random_state=4, **kwargs)
    assert c.X.shape != a.X.shape or not np.array_equal(c.X, a.X)
    # A Generator is accepted and consumed; None draws fresh entropy.
    assert make_ranking(3, n_features=2, random_state=np.random.default_rng(0)).n_queries == 3
    assert make_ranking(3, n_features=2, random_state=None).n_queries == 3


def test_make_ranking_matches_mslr_shape_statistics():
    data = make_ranking(3000, n_features=20)
    assert data.X.dtype == np.float32 and data.X.flags.c_contiguous
    assert np.isfinite(data.X).all()
    np.testing.assert_array_equal(data.qid, np.repeat(np.arange(3000), data.group))
    assert data.feature_names == [f"f{j}" for j in range(1, 21)]
    sizes = data.group
    assert sizes.min() >= 1 and sizes.max() <= 1000
    assert 110 <= sizes.mean() <= 130
    assert 0.7 <= np.median(sizes) / sizes.mean() <= 0.9
    assert np.percentile(sizes, 99) > 3 * sizes.mean()  # long right tail
    shares = np.bincount(data.y.astype(int), minlength=5) / data.n_rows
    np.testing.assert_allclose(shares, [0.52, 0.32, 0.13, 0.02, 0.01], atol=0.005)
    # Some queries have no relevant document at all, most have several.
    per_query_max = np.maximum.reduceat(data.y, data.offsets[:-1])
    assert 0.0 < np.mean(per_query_max == 0) < 0.1
    # Query-level features (about 10 %) are constant within every query.
    lo = np.minimum.reduceat(data.X, data.offsets[:-1], axis=0)
    hi = np.maximum.reduceat(data.X, data.offsets[:-1], axis=0)
    constant = np.all(lo == hi, axis=0)
    np.testing.assert_array_equal(np.flatnonzero(constant), [9, 19])
    clipped = make_ranking(200, n_features=2, mean_docs=100, max_docs=150)
    assert clipped.group.max() == 150


def test_make_ranking_is_learnable_by_lightgbm_lambdarank():
    data = make_ranking(400, n_features=40, mean_docs=40, random_state=0)
    train, test = data.subset(np.arange(300)), data.subset(np.arange(300, 400))
    booster = lgb.train(
        {"objective": "lambdarank", "num_threads": 1, "verbose": -1, "seed": 0},
        lgb.Dataset(train.X, train.y, group=train.group),
        num_boost_round=50,
    )
    model = naive_ndcg_at_10(test.y, booster.predict(test.X), test.offsets)
    rng = np.random.default_rng(0)
    random = np.mean(
        [naive_ndcg_at_10(test.y, rng.random(test.n_rows), test.offsets) for _ in range(5)]
    )
    assert model > 0.5
    assert model > random + 0.15


def test_make_ranking_objectives_are_correlated_but_distinct():
    names = ("watch", "share", "follow", "other")
    data = make_ranking(400, n_features=30, mean_docs=40, objectives=names)
    assert list(data.labels) == list(names)
    np.testing.assert_array_equal(data.y, data.labels["watch"])
    expected_max = {"watch": 3, "share": 2, "follow": 3, "other": 4}
    for name, top in expected_max.items():
        values = np.unique(data.labels[name])
        np.testing.assert_array_equal(values, np.arange(top + 1))
    assert np.mean(data.labels["share"] == 0) > 0.7  # sharing is rare
    corr = np.corrcoef(np.array([data.labels[n] for n in names]))
    off_diagonal = corr[~np.eye(len(names), dtype=bool)]
    assert off_diagonal.min() > 0.25 and off_diagonal.max() < 0.9
    # Features do not depend on the objectives.
    plain = make_ranking(400, n_features=30, mean_docs=40)
    np.testing.assert_array_equal(plain.X, data.X)


def test_make_ranking_segments_are_per_query_categories():
    data = make_ranking(300, n_features=10, mean_docs=20, n_segments=4)
    seg = data.segments
    starts = data.offsets[:-1]
    per_query = seg[starts]
    np.testing.assert_array_equal(seg, np.repeat(per_query, data.group))
    assert set(per_query) == {"seg0", "seg1", "seg2", "seg3"}
    counts = pd.Series(per_query).value_counts()
    assert counts["seg0"] > counts["seg3"]  # unequal sizes
    plain = make_ranking(300, n_features=10, mean_docs=20)
    np.testing.assert_array_equal(plain.X, data.X)
    np.testing.assert_array_equal(plain.y, data.y)


@pytest.mark.parametrize("n_features", [1, 3, 9, 11])
def test_make_ranking_handles_few_features(n_features):
    data = make_ranking(30, n_features=n_features, mean_docs=10, objectives=("a", "b"))
    assert data.X.shape[1] == n_features
    assert np.isfinite(data.X).all()
    assert data.y.max() >= 1


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"n_queries": 0}, ValueError, "n_queries must be >= 1, got 0"),
        ({"n_queries": 2.5}, TypeError, "n_queries must be an integer, got 2.5"),
        ({"n_features": 0}, ValueError, "n_features must be >= 1, got 0"),
        ({"mean_docs": 0.5}, ValueError, "mean_docs must be >= 1.0, got 0.5"),
        ({"max_docs": 0}, ValueError, "max_docs must be >= 1, got 0"),
        (
            {"mean_docs": 50, "max_docs": 20},
            ValueError,
            "mean_docs must be <= max_docs, got mean_docs=50.0",
        ),
        ({"n_segments": -1}, ValueError, "n_segments must be >= 0, got -1"),
        ({"objectives": "watch"}, TypeError, "objectives must be a sequence of names"),
        ({"objectives": ()}, ValueError, "objectives is empty"),
        ({"objectives": ("a", "a")}, ValueError, "objectives must be unique"),
        ({"objectives": ("a", 3)}, TypeError, r"objectives\[1\] must be a non-empty str, got 3"),
        ({"random_state": -1}, ValueError, "random_state must be >= 0, got -1"),
        (
            {"random_state": "seed"},
            TypeError,
            "random_state must be an int, a numpy Generator or None",
        ),
    ],
)
def test_make_ranking_rejects_bad_arguments(kwargs, error, match):
    kwargs = {"n_queries": 5, **kwargs}
    with pytest.raises(error, match=match):
        make_ranking(**kwargs)


@pytest.mark.parametrize(
    "module",
    [
        ltr.datasets,
        ltr.datasets._container,
        ltr.datasets._letor,
        ltr.datasets._frame,
        ltr.synthetic,
    ],
    ids=lambda m: m.__name__,
)
def test_docstring_examples_run(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


# ---------------------------------------------------------------------------
# ltr.testing: the helpers these tests share
# ---------------------------------------------------------------------------


def test_ltr_testing_imports_only_lower_layers_and_not_pytest():
    import subprocess
    import sys

    code = (
        "import sys, ltr.testing\n"
        "bad = sorted(m for m in sys.modules if m == 'pytest' or m.startswith(("
        "'ltr.estimator', 'ltr.cli', 'ltr.runs', 'ltr.build', 'ltr.engines', 'lightgbm', "
        "'xgboost')))\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_ltr_testing_doctests_pass():
    import ltr.testing.agreement
    import ltr.testing.data
    import ltr.testing.references

    for module in (ltr.testing.agreement, ltr.testing.data, ltr.testing.references):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.failed == 0, module.__name__


def test_ltr_no_shared_hides_the_full_set_and_falls_back_to_the_slice(monkeypatch):
    from ltr.testing import NO_SHARED_ENV, letor_full_path, letor_path, letor_slice_path

    monkeypatch.setenv(NO_SHARED_ENV, "1")
    assert letor_full_path() is None
    assert letor_path() == letor_slice_path()
    monkeypatch.setenv(NO_SHARED_ENV, "0")
    full = letor_full_path()
    assert letor_path() == (letor_slice_path() if full is None else full)


def test_make_queries_is_seeded_grouped_and_learnable():
    from ltr.metrics import ndcg
    from ltr.testing import make_queries

    data = make_queries(30, docs=(2, 12), n_features=4, seed=3)
    again = make_queries(30, docs=(2, 12), n_features=4, seed=3)
    np.testing.assert_array_equal(data.X, again.X)
    np.testing.assert_array_equal(data.offsets, np.r_[0, np.cumsum(data.group)])
    np.testing.assert_array_equal(data.qid, np.repeat(np.arange(30), data.group))
    assert set(np.unique(data.y)) <= {0.0, 1.0, 2.0, 3.0, 4.0}
    # grades follow the first feature: ranking by it beats ranking by a noise column
    by_signal = ndcg(data.y, data.X[:, 0], offsets=data.offsets, k=5)
    by_noise = ndcg(data.y, data.X[:, 3], offsets=data.offsets, k=5)
    assert by_signal > by_noise + 0.1


def test_logged_ranking_fields_are_checked_and_kept_through_subset():
    X, y, qid = small_data()
    position = np.concatenate([np.arange(1, n + 1) for n in (3, 1, 4, 2, 5)])
    click = (position == 1).astype(float)
    data = RankingData(X=X, y=y, qid=qid, position=position, click=click, doc=np.arange(15))
    assert data.position.dtype == np.float64 and data.labels == {}
    part = data.subset([2, 0])
    np.testing.assert_array_equal(part.position, [1, 2, 3, 4, 1, 2, 3])
    np.testing.assert_array_equal(part.click, [1, 0, 0, 0, 1, 0, 0])
    np.testing.assert_array_equal(part.doc, [4, 5, 6, 7, 0, 1, 2])
    assert data.subset([1]).position is not None and RankingData(X=X, y=y, qid=qid).doc is None
    with pytest.raises(ValueError, match="position has 2 rows but X has 15"):
        RankingData(X=X, y=y, qid=qid, position=[1, 2])
    with pytest.raises(ValueError, match="click must be finite"):
        RankingData(X=X, y=y, qid=qid, click=np.full(15, np.nan))
