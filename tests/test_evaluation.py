"""ltr.evaluation: qrels/run evaluation against pytrec_eval, ranx and a naive loop."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ltr.evaluation import EvaluationResult, evaluate
from ltr.evaluation.trec import write_run

pytrec_eval = pytest.importorskip("pytrec_eval")

# our name -> pytrec_eval measure
TREC = {
    "ndcg": "ndcg",
    "ndcg@5": "ndcg_cut_5",
    "ndcg@10": "ndcg_cut_10",
    "map": "map",
    "map@5": "map_cut_5",
    "mrr": "recip_rank",
    "precision@5": "P_5",
    "precision@20": "P_20",
    "recall@5": "recall_5",
    "recall@100": "recall_100",
    "r-precision": "Rprec",
}


def random_collection(seed, n_queries=30, max_docs=40, tie_levels=4, negative=False):
    """qrels and run dicts with ties, unjudged and unretrieved documents, -inf scores."""
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for q in range(n_queries):
        qid = f"q{q}"
        n_docs = int(rng.integers(1, max_docs))
        # ids of one width (ranx compiles its sort once per id width: 8 characters everywhere)
        pool = [f"d{j:07d}" for j in rng.permutation(3 * max_docs)[: n_docs + 10]]
        judged = pool[: int(rng.integers(1, n_docs + 5))]
        low = -1 if negative else 0
        qrels[qid] = {d: int(rng.integers(low, 4)) for d in judged}
        retrieved = list(rng.permutation(pool)[:n_docs])
        scores = rng.integers(0, tie_levels, n_docs).astype(float) if tie_levels else (
            rng.normal(size=n_docs))
        run[qid] = {str(d): float(s) for d, s in zip(retrieved, scores)}
    return qrels, run


def _peer_trec(qrels, run, level=1):
    measures = set(TREC.values())
    ev = pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=level)
    return ev.evaluate(run)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("level", [1, 2])
def test_trec_eval_convention_equals_pytrec_eval_per_query(seed, level):
    # seed 3: distinct scores (no query needs the tie-aware sort)
    qrels, run = random_collection(seed, negative=seed == 2, tie_levels=0 if seed == 3 else 4)
    run["q0"] = {}  # a query without retrieved documents is missing
    del run["q1"]
    run["extra"] = {"d1": 1.0}  # queries only in the run are ignored
    peer = _peer_trec(qrels, {q: d for q, d in run.items() if d}, level)
    res = evaluate(qrels, run, list(TREC), relevance_level=level)
    frame = res.to_frame()
    assert set(frame.index) == set(peer)
    assert set(res.missing_queries) == {"q0", "q1"}
    for qid, values in peer.items():
        for ours, theirs in TREC.items():
            assert frame.loc[qid, ours] == pytest.approx(values[theirs], abs=1e-12), (qid, ours)


def test_trec_eval_convention_on_trec_files(tmp_path):
    qrels, run = random_collection(3, tie_levels=3)
    qpath, rpath = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qpath.write_text(
        "".join(f"{q} 0 {d} {r}\n" for q, docs in qrels.items() for d, r in docs.items())
    )
    rows = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    write_run(rpath, *zip(*rows), tag="t")
    with open(qpath) as fq, open(rpath) as fr:
        peer_q, peer_r = pytrec_eval.parse_qrel(fq), pytrec_eval.parse_run(fr)
    peer = pytrec_eval.RelevanceEvaluator(peer_q, set(TREC.values())).evaluate(peer_r)
    frame = evaluate(qpath, rpath, list(TREC)).to_frame()
    assert isinstance(frame.index[0], str)
    for qid, values in peer.items():
        for ours, theirs in TREC.items():
            assert frame.loc[qid, ours] == pytest.approx(values[theirs], abs=1e-12)


def test_missing_zero_is_trec_eval_c():
    qrels, run = random_collection(4)
    del run["q3"]
    ev = pytrec_eval.RelevanceEvaluator(qrels, {"map", "ndcg"})
    peer = ev.evaluate(run)
    res = evaluate(qrels, run, ["map", "ndcg"], missing="zero")
    assert res.n_queries == len(qrels)
    assert res.to_frame().loc["q3"].tolist() == [0.0, 0.0]
    total = sum(v["map"] for v in peer.values())
    assert res.mean["map"] == pytest.approx(total / len(qrels), abs=1e-12)
    assert res.missing_queries == ["q3"]


def test_minus_inf_scores_are_not_ranked():
    qrels = {"q": {"a": 1, "b": 2}}
    with pytest.warns(UserWarning, match="1 document.* scored -inf are left unranked"):
        res = evaluate(qrels, {"q": {"b": -math.inf, "a": 2.0}}, ["ndcg", "mrr", "precision@2"])
    # b is unretrieved: it counts in the ideal DCG but never as retrieved
    ideal = 2 + 1 / math.log2(3)
    assert res.mean["ndcg"] == pytest.approx(1 / ideal, abs=1e-15)
    assert res.mean["precision@2"] == 0.5


# --------------------------------------------------------------------------- #
# ranx                                                                         #
# --------------------------------------------------------------------------- #

RANX = ["ndcg", "ndcg@5", "map", "map@5", "mrr", "mrr@3", "precision@5", "recall@10",
        "r-precision", "hit_rate@5", "hit_rate"]


@pytest.mark.parametrize("seed, max_docs, tie_levels", [(0, 12, 5), (1, 40, 5), (2, 60, 5),
                                                        (3, 40, 0)])
def test_ranx_convention_equals_ranx_per_query(seed, max_docs, tie_levels):
    ranx = pytest.importorskip("ranx")
    qrels, run = random_collection(seed, max_docs=max_docs, tie_levels=tie_levels)
    rq, rr = ranx.Qrels(qrels), ranx.Run(run)
    ranx.evaluate(rq, rr, RANX, return_mean=False)
    frame = evaluate(qrels, run, RANX, convention="ranx").to_frame()
    for name in RANX:
        for qid, value in rr.scores[name].items():
            assert frame.loc[qid, name] == pytest.approx(value, abs=1e-12), (qid, name)


def test_ranx_convention_with_a_relevance_level():
    ranx = pytest.importorskip("ranx")
    qrels, run = random_collection(5, max_docs=30, tie_levels=5)
    rr = ranx.Run(run)
    ranx.evaluate(ranx.Qrels(qrels), rr, [f"{n}-l2" for n in RANX], return_mean=False)
    frame = evaluate(qrels, run, RANX, convention="ranx", relevance_level=2).to_frame()
    for name in RANX:
        for qid, value in rr.scores[f"{name}-l2"].items():
            assert frame.loc[qid, name] == pytest.approx(value, abs=1e-12), (qid, name)


# --------------------------------------------------------------------------- #
# naive reference (ERR, hit rate, dcg)                                         #
# --------------------------------------------------------------------------- #


def naive(qrels, run, name, k, level=1, gmax=None):
    gmax = max(max(d.values()) for d in qrels.values()) if gmax is None else gmax
    out = {}
    for qid, judged in qrels.items():
        if qid not in run:
            continue
        docs = sorted(((s, d) for d, s in run[qid].items() if s > -math.inf), reverse=True)
        rels = [judged.get(d, 0) for _, d in docs][:k]
        if name == "err":
            value, stop = 0.0, 1.0
            for i, g in enumerate(rels):
                r = (2 ** max(g, 0) - 1) / 2**gmax
                value += stop * r / (i + 1)
                stop *= 1 - r
        elif name == "hit_rate":
            value = float(any(g >= level for g in rels))
        else:  # dcg
            value = sum(max(g, 0) / math.log2(i + 2) for i, g in enumerate(rels))
        out[qid] = value
    return out


@pytest.mark.parametrize("name", ["err", "hit_rate", "dcg"])
def test_metrics_trec_eval_lacks_equal_a_naive_loop(name):
    qrels, run = random_collection(5, tie_levels=0)  # no ties: any order convention agrees
    for conv in ("trec_eval", "ranx"):
        frame = evaluate(qrels, run, [f"{name}@5"], convention=conv).to_frame()
        for qid, value in naive(qrels, run, name, 5).items():
            assert frame.loc[qid, f"{name}@5"] == pytest.approx(value, abs=1e-12)


def test_err_closed_form_and_max_grade():
    qrels = {"q": {"a": 2, "b": 1}}
    run = {"q": {"a": 2.0, "b": 1.0}}
    r1, r2 = 3 / 4, 1 / 4
    expected = r1 + (1 - r1) * r2 / 2
    assert evaluate(qrels, run, "err").mean["err"] == pytest.approx(expected, abs=1e-15)
    r1, r2 = 3 / 16, 1 / 16
    value = evaluate(qrels, run, "err", max_grade=4).mean["err"]
    assert value == pytest.approx(r1 + (1 - r1) * r2 / 2, abs=1e-15)


# --------------------------------------------------------------------------- #
# inputs and the result                                                        #
# --------------------------------------------------------------------------- #


def _frames(qrels, run):
    q = pd.DataFrame([(a, b, c) for a, d in qrels.items() for b, c in d.items()],
                     columns=["qid", "doc_id", "relevance"])
    r = pd.DataFrame([(a, b, c) for a, d in run.items() for b, c in d.items()],
                     columns=["qid", "doc_id", "score"])
    return q, r


def test_dataframes_dicts_and_categoricals_give_the_same_values():
    qrels, run = random_collection(6)
    names = ["ndcg@10", "map", "err@5"]
    a = evaluate(qrels, run, names).to_frame()
    q, r = _frames(qrels, run)
    b = evaluate(q, r, names).to_frame()
    r_cat = r.assign(qid=r["qid"].astype("category"), doc_id=r["doc_id"].astype("category"))
    c = evaluate(q, r_cat, names).to_frame()
    pd.testing.assert_frame_equal(a, b)
    pd.testing.assert_frame_equal(a, c)


def test_integer_query_ids_match_string_ids_from_files(tmp_path):
    q = pd.DataFrame({"qid": [1, 1, 2], "doc_id": ["a", "b", "c"], "relevance": [1, 0, 1]})
    path = tmp_path / "run"
    write_run(path, ["1", "1", "2"], ["a", "b", "x"], [1.0, 2.0, 3.0])
    res = evaluate(q, path, ["mrr"])
    assert res.to_frame()["mrr"].tolist() == [0.5, 0.0]


def test_result_object_summaries():
    qrels, run = random_collection(7)
    res = evaluate(qrels, run, ["ndcg@10", "precision@5"])
    assert isinstance(res, EvaluationResult)
    frame = res.to_frame()
    assert list(frame.columns) == ["ndcg@10", "precision@5"] and frame.index.name == "qid"
    assert res.n_queries == len(frame)
    assert res.mean["ndcg@10"] == pytest.approx(frame["ndcg@10"].mean())
    low, high = res.ci["ndcg@10"]
    assert low < res.mean["ndcg@10"] < high
    summary = res.summary()
    assert summary.loc["ndcg@10", "ci_low"] == low
    text = res.to_markdown()
    assert "| ndcg@10 |" in text and "95% CI" in text
    data = res.to_dict()
    assert data["mean"] == res.mean and len(data["per_query"]) == res.n_queries
    assert '"ndcg@10"' in res.to_json()


@pytest.mark.parametrize(
    "qrels, run, exc, match",
    [
        ({"q": {"a": 1}}, pd.DataFrame({"qid": ["q", "q"], "doc_id": ["a", "a"],
                                         "score": [1.0, 2.0]}), ValueError,
         r"run row 1: duplicated \(qid, doc_id\) = \('q', 'a'\)"),
        (pd.DataFrame({"qid": ["q", "q"], "doc_id": ["a", "a"], "relevance": [1, 0]}),
         {"q": {"a": 1.0}}, ValueError, r"qrels row 1: duplicated"),
        ({"q": {"a": "high"}}, {"q": {"a": 1.0}}, TypeError,
         r"qrels\['q'\]\['a'\] = 'high': relevance must be a number"),
        (pd.DataFrame({"qid": ["q"], "doc_id": ["a"], "relevance": ["x"]}), {"q": {"a": 1.0}},
         TypeError, r"qrels column 'relevance' must be numeric; row 0 holds 'x'"),
        ({"q": {"a": math.nan}}, {"q": {"a": 1.0}}, ValueError,
         r"qrels row 0: relevance must be finite, got nan"),
        ({"q": {"a": 1}}, {"q": {"a": math.nan}}, ValueError, r"run row 0: score must be a number or -inf \(not ranked\), got nan"),
        (pd.DataFrame({"qid": ["q"], "doc": ["a"], "relevance": [1]}), {"q": {"a": 1.0}},
         ValueError, r"qrels DataFrame lacks column\(s\) \['doc_id'\]"),
        (pd.DataFrame({"qid": [], "doc_id": [], "relevance": []}), {"q": {"a": 1.0}},
         ValueError, r"qrels is empty"),
        ({"q": {"a": 1}}, [1, 2], TypeError, r"run must be a pandas DataFrame"),
    ],
)
def test_evaluate_rejects_bad_input_with_informative_errors(qrels, run, exc, match):
    with pytest.raises(exc, match=match):
        evaluate(qrels, run, ["map"])


def test_evaluate_rejects_bad_options():
    q, r = {"q": {"a": 1}}, {"q": {"a": 1.0}}
    with pytest.raises(ValueError, match="unknown metric 'foo'"):
        evaluate(q, r, ["foo@3"])
    with pytest.raises(ValueError, match="takes no @K"):
        evaluate(q, r, ["r-precision@3"])
    with pytest.raises(ValueError, match="convention must be None or one of"):
        evaluate(q, r, ["map"], convention="sklearn")
    with pytest.raises(ValueError, match="missing must be 'skip' or 'zero'"):
        evaluate(q, r, ["map"], missing="drop")


def test_duplicate_in_a_run_file_names_the_line(tmp_path):
    path = tmp_path / "run.txt"
    path.write_text("q Q0 a 1 2.0 t\n\nq Q0 a 2 1.0 t\n")
    with pytest.raises(ValueError, match=r"run file '.*run.txt', line 3 .*duplicated"):
        evaluate({"q": {"a": 1}}, path, ["map"])


def test_metric_names_are_parsed_by_the_one_parser():
    import ltr
    from ltr.evaluation import metric_codes
    from ltr.metrics.names import EVALUATION_METRICS, parse_metric_name

    names, _, ks = metric_codes(["MAP", "ndcg@10", "r-precision", "MAP"])
    assert names == ["MAP", "ndcg@10", "r-precision"] and ks.tolist() == [0, 10, 0]
    assert str(parse_metric_name("hit_rate@10", metrics=EVALUATION_METRICS)) == "hit_rate@10"
    with pytest.raises(ValueError, match="pass the convention to evaluate"):
        metric_codes(["ndcg@10:sklearn"])
    assert ltr.evaluate is evaluate
    res = ltr.evaluate({"q": {"a": 1}}, {"q": {"a": 1.0}}, "MAP")
    assert list(res.to_frame().columns) == ["MAP"] and res.mean == {"MAP": 1.0}


def test_a_query_whose_scores_are_all_minus_inf_is_evaluated_with_nothing_ranked():
    with pytest.warns(UserWarning, match="trec_eval would rank them last"):
        res = evaluate({"q": {"a": 1}, "r": {"b": 1}}, {"q": {"a": -math.inf}, "r": {"b": 1.0}},
                       ["ndcg", "precision@1"])
    assert res.to_frame().loc["q"].tolist() == [0.0, 0.0] and res.missing_queries == []


def test_long_fully_judged_queries_take_the_sorting_path_and_still_agree():
    rng = np.random.default_rng(8)
    qrels = {f"q{i}": {f"d{j}": int(rng.integers(0, 3)) for j in range(150)} for i in range(3)}
    run = {q: {d: float(rng.normal()) for d in docs} for q, docs in qrels.items()}
    peer = _peer_trec(qrels, run)
    frame = evaluate(qrels, run, list(TREC)).to_frame()
    for qid, values in peer.items():
        for ours, theirs in TREC.items():
            assert frame.loc[qid, ours] == pytest.approx(values[theirs], abs=1e-12)
