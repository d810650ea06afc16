"""ltr.evaluation.comparison: paired tests against independent references, segments, alignment, reports."""

from __future__ import annotations

import base64
import math
import re

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from ltr.evaluation.comparison import compare, holm, read_per_query


def _pair(n=60, shift=0.02, seed=0):
    rng = np.random.default_rng(seed)
    qid = [f"q{i}" for i in range(n)]
    a = pd.DataFrame({"ndcg@10": rng.random(n), "map": rng.random(n)}, index=qid)
    b = a + rng.normal(shift, 0.1, a.shape)
    return a, b


def _naive(a, b, n_resamples, alpha, seed):
    """Row-by-row loops drawing the documented stream: sign flips, then bootstrap indices."""
    rng = np.random.default_rng(seed)
    d = [float(y - x) for x, y in zip(a, b)]
    n = len(d)
    observed = abs(sum(d))
    hits = 0
    for _ in range(n_resamples):
        s = 0.0
        for v in d:
            s += -v if rng.random() < 0.5 else v
        hits += abs(s) >= observed - 1e-9
    p = (hits + 1) / (n_resamples + 1)
    means = []
    for _ in range(n_resamples):
        idx = [min(int(rng.random() * n), n - 1) for _ in range(n)]
        means.append(np.mean(np.asarray(d)[idx]))
    lo, hi = np.percentile(means, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return p, lo, hi


def test_statistics_equal_independent_references():
    a, b = _pair()
    res = compare(a, b, n_resamples=400, random_state=7, alpha=0.1)
    t = res.to_frame().set_index("metric")
    for metric in ("ndcg@10", "map"):
        row = t.loc[metric]
        assert row["segment"] == "all" and row["n"] == 60
        assert row["delta"] == pytest.approx(b[metric].mean() - a[metric].mean())
        assert row["rel_delta"] == pytest.approx(row["delta"] / a[metric].mean())
        assert row["p_t"] == pytest.approx(stats.ttest_rel(b[metric], a[metric]).pvalue, rel=1e-12)
        p, lo, hi = _naive(a[metric].to_numpy(), b[metric].to_numpy(), 400, 0.1, 7)
        assert row["p_randomization"] == pytest.approx(p, rel=1e-12)
        assert row["ci_low"] == pytest.approx(lo, rel=1e-9)
        assert row["ci_high"] == pytest.approx(hi, rel=1e-9)
        d = b[metric] - a[metric]
        assert (row["wins"], row["ties"], row["losses"]) == ((d > 0).sum(), 0, (d < 0).sum())
    assert t["p_adjusted"].tolist() == pytest.approx(holm(t["p_randomization"]).tolist())


def test_chunked_draws_equal_one_block(monkeypatch):
    import ltr.evaluation.comparison as C

    a, b = _pair(n=30)
    whole = compare(a, b, n_resamples=300, random_state=3).to_frame()
    monkeypatch.setattr(C, "_CHUNK_CELLS", 7 * 30)  # 7 resamples per chunk
    chunked = compare(a, b, n_resamples=300, random_state=3).to_frame()
    pd.testing.assert_frame_equal(whole, chunked)


def test_holm_matches_hand_computation():
    adj = holm([0.01, 0.04, math.nan, 0.03])
    assert adj[0] == pytest.approx(0.03) and adj[1] == pytest.approx(0.06)
    assert math.isnan(adj[2]) and adj[3] == pytest.approx(0.06)


def test_planted_segment_regression_under_improving_total_is_flagged():
    rng = np.random.default_rng(11)
    n = 600
    qid = [f"q{i}" for i in range(n)]
    seg = pd.Series(np.where(np.arange(n) % 4 == 0, "tail", "head"), index=qid)
    a = pd.Series(rng.uniform(0.3, 0.8, n), index=qid, name="ndcg@10")
    delta = np.where(seg == "tail", -0.08, 0.06) + rng.normal(0, 0.03, n)
    b = a + delta
    res = compare(a, b, segments=seg, n_resamples=2000, random_state=0)
    t = res.to_frame().set_index("segment")
    assert t.loc["all", "delta"] > 0 and not t.loc["all", "regressed"]
    assert t.loc["tail", "regressed"] and not t.loc["head", "regressed"]
    assert res.any_regression and res.regressions["segment"].tolist() == ["tail"]


def test_left_out_tests_and_small_segments_leave_nan():
    a, b = _pair(n=50)
    seg = pd.Series(["big"] * 45 + ["small"] * 5, index=a.index)
    res = compare(a["map"], b["map"], segments=seg, tests=("t",), n_resamples=50, random_state=0)
    t = res.to_frame().set_index("segment")
    assert np.isnan(t.loc["all", "p_randomization"]) and np.isnan(t.loc["all", "ci_low"])
    assert not np.isnan(t.loc["all", "p_t"])
    assert res.adjusted_on == "p_t" and not np.isnan(t.loc["all", "p_adjusted"])
    assert t.loc["small", "too_few_queries"] and not t.loc["big", "too_few_queries"]
    assert np.isnan(t.loc["small", ["p_t", "p_randomization", "p_adjusted"]].astype(float)).all()


def test_differing_query_sets_error_or_intersect():
    a, b = _pair(n=40)
    b = b.drop(index=["q0", "q1"])
    a2 = a.drop(index=["q5"])
    with pytest.raises(ValueError, match=r"b lacks 2 .* a lacks 1 .*align='intersect'"):
        compare(a2, b)
    res = compare(a2, b, align="intersect", n_resamples=20, random_state=0)
    assert (res.n_only_a, res.n_only_b) == (2, 1)
    assert set(res.to_frame()["n"]) == {37}


def test_duck_typed_result_objects_are_accepted():
    a, b = _pair(n=30)

    class Result:
        def __init__(self, f):
            self.f = f

        def to_frame(self):
            return self.f

    direct = compare(a, b, n_resamples=50, random_state=1).to_frame()
    duck = compare(Result(a), Result(b), n_resamples=50, random_state=1).to_frame()
    pd.testing.assert_frame_equal(direct, duck)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(tests=("z",)), "tests must be"),
        (dict(alpha=1.5), "alpha must be"),
        (dict(align="union"), "align must be"),
        (dict(n_resamples=0), "n_resamples"),
        (dict(metrics=["err@3"]), "not in both"),
    ],
)
def test_compare_rejects_bad_arguments_with_informative_errors(kwargs, match):
    a, b = _pair(n=20)
    with pytest.raises((ValueError, TypeError), match=match):
        compare(a, b, **kwargs)


def test_run_folders_and_report_files(tmp_path):
    from ltr.runs.compare_cmd import compare_runs

    a, b = _pair(n=40)
    for name, f in (("ra", a), ("rb", b)):
        d = tmp_path / name
        d.mkdir()
        out = f.clip(0.0, 1.0).rename_axis("qid").reset_index()  # per-query files hold [0, 1]
        out.insert(1, "segment", ["x" if i % 2 else "y" for i in range(40)])
        out.to_csv(d / "per_query_test.csv", index=False)
    assert list(read_per_query(tmp_path / "ra").columns) == ["segment", "ndcg@10", "map"]
    res = compare_runs(tmp_path / "ra", tmp_path / "rb", out=tmp_path / "cmp", n_resamples=50,
                       random_state=0)
    t = res.comparison.to_frame()
    assert sorted(set(t["segment"])) == ["all", "x", "y"]
    for name in ("report.md", "report.html", "forest.png", "comparison.csv", "comparison.json"):
        assert (tmp_path / "cmp" / name).is_file()
    assert "| metric | segment |" in (tmp_path / "cmp" / "report.md").read_text()
    # the HTML report embeds the forest plot (opens on its own), as run reports do
    page = (tmp_path / "cmp" / "report.html").read_text()
    forest = base64.b64encode((tmp_path / "cmp" / "forest.png").read_bytes()).decode()
    assert f'src="data:image/png;base64,{forest}"' in page
    assert re.findall(r'(?:src|href)="(?!data:)([^"]*)"', page) == []
    with pytest.raises(FileNotFoundError, match="per_query_valid.csv"):
        compare_runs(tmp_path / "ra", tmp_path / "rb", split="valid")


def test_the_top_level_name_is_the_function_even_after_the_module_is_imported():
    import ltr
    import ltr.evaluation.comparison
    import ltr.runs.compare_cmd

    assert ltr.compare is ltr.evaluation.comparison.compare
    assert callable(ltr.compare) and callable(ltr.evaluate)
