"""Bad input to ltr.clicks (simulation, propensity estimation) and ltr.clicks.ips (IPS metrics).

Table-driven: every case asserts the exception type and a message fragment naming the
argument and the bad value (these functions write nothing).  Then the oddity the issue
found: EM on a log whose order never varies returned ``converged=True`` with wrong
propensities; now it is refused (or, for positions linked to none, NaN with a warning).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import pytest

from ltr.clicks import (
    estimate_propensity_em,
    estimate_propensity_swap,
    simulate_cascade,
    simulate_pbm,
)
from ltr.clicks.ips import ips_dcg, ips_ndcg
from ltr.datasets import from_frame

# 4 lists of 3 impressions; each query-document pair shown at several positions
CLICK = np.array([1, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 1], dtype=float)
POS = np.array([1, 2, 3, 2, 1, 3, 3, 1, 2, 1, 3, 2])
DOC = np.array([0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2])
QID = np.repeat(np.arange(4), 3)
SCORE = np.array([3.0, 2, 1, 2, 3, 1, 1, 3, 2, 3, 1, 2])
THETA = np.array([1.0, 0.5, 0.33])


def _em(**kw: Any) -> Any:
    args: dict[str, Any] = {"position": POS, "doc": DOC, "qid": QID}
    args.update(kw)
    click = args.pop("click", CLICK)
    return estimate_propensity_em(click, **args)


def _swap(**kw: Any) -> Any:
    args: dict[str, Any] = {"position": POS, "swap": np.repeat([2, 3, 0, 2], 3), "qid": QID}
    args.update(kw)
    return estimate_propensity_swap(args.pop("click", CLICK), **args)


def _ips(fn: Callable[..., Any] = ips_ndcg, **kw: Any) -> Any:
    args: dict[str, Any] = {"position": POS, "propensity": THETA, "qid": QID, "k": 3}
    args.update(kw)
    return fn(args.pop("click", CLICK), args.pop("y_score", SCORE), **args)


def _with(arr: np.ndarray, i: int, value: Any) -> np.ndarray:
    out = arr.astype(float if not isinstance(value, complex) else complex)
    out[i] = value
    return out


class Case(NamedTuple):
    call: Callable[[], Any]
    exc: type[BaseException]
    match: str


LABELS = np.array([2, 1, 0, 1, 0, 0])

CASES: dict[str, Case] = {
    # ---------------------------------------------------------------- EM
    "em-order-never-varies": Case(lambda: _em(position=np.tile([1, 2, 3], 4),
                                              doc=np.tile([0, 1, 2], 4)),
                                  ValueError, r"doc: each of the 3 query-document pairs was logged "
                                  r"at one position only .*not identifiable"),
    "em-click-log-and-arrays": Case(lambda: estimate_propensity_em(
        simulate_pbm(LABELS, group=[3, 3], random_state=0), position=POS), ValueError,
        r"pass a ClickLog alone, or click, position, doc and qid/offsets arrays; not both"),
    "em-no-lists": Case(lambda: _em(qid=None), TypeError,
                        r"the displayed lists are missing: pass qid"),
    "em-no-position": Case(lambda: _em(position=None), TypeError,
                           r"position is required with click arrays"),
    "em-no-doc": Case(lambda: _em(doc=None), TypeError, r"doc is required with click arrays"),
    "em-short-doc": Case(lambda: _em(doc=DOC[:5]), ValueError,
                         r"doc must have one entry per row \(12\), got shape \(5,\)"),
    "em-n-iter-zero": Case(lambda: _em(n_iter=0), ValueError, r"n_iter must be >= 1, got 0"),
    "em-tol-negative": Case(lambda: _em(tol=-1e-3), ValueError, r"tol must be >= 0"),
    "em-max-position-zero": Case(lambda: _em(max_position=0), ValueError,
                                 r"max_position must be >= 1, got 0"),
    "em-click-two": Case(lambda: _em(click=_with(CLICK, 4, 2)), ValueError,
                         r"click must hold clicks 0 or 1; click\[4\] = 2\.0"),
    "em-click-complex": Case(lambda: _em(click=_with(CLICK, 0, 1 + 1j)), TypeError,
                             r"click must contain real numbers, got complex"),
    "em-click-text": Case(lambda: _em(click=np.array(["1"] * 12)), TypeError,
                          r"click must contain numbers, got dtype <U1"),
    "em-position-repeated": Case(lambda: _em(position=_with(POS, 1, 1)), ValueError,
                                 r"position must be a permutation of 1\.\.n within each query.*"
                                 r"gives position 1 to rows 0 and 1"),
    "em-position-missing": Case(lambda: _em(position=_with(POS, 3, np.nan)), ValueError,
                                r"position must not be missing; position\[3\] = nan"),
    "em-position-fraction": Case(lambda: _em(position=_with(POS, 2, 2.5)), ValueError,
                                 r"position must hold integer display ranks; position\[2\] = 2\.5"),
    "em-position-zero": Case(lambda: _em(position=POS - 1), ValueError,
                             r"position must be display ranks starting at 1 .*position\[0\] = 0"),
    # ---------------------------------------------------------------- swap
    "swap-k-one": Case(lambda: _swap(swap=np.repeat([1, 2, 0, 2], 3)), ValueError,
                       r"swap must be 0 \(none\) or a rank k >= 2; swap\[0\] = 1\.0"),
    "swap-differs-in-list": Case(lambda: _swap(swap=np.r_[2, 3, 2, np.repeat([2, 0, 2], 3)]),
                                 ValueError, r"swap must be the same for every impression of a "
                                 r"list; swap\[1\] = 3 but its list starts with 2"),
    "swap-never": Case(lambda: _swap(swap=np.zeros(12)), ValueError,
                       r"the log has no swap experiment \(swap is 0 everywhere\)"),
    "swap-nan": Case(lambda: _swap(swap=_with(np.repeat([2, 3, 0, 2], 3), 5, np.nan)),
                     ValueError, r"swap\[5\] = nan"),
    # ---------------------------------------------------------------- IPS metrics
    "ips-propensity-too-short": Case(lambda: _ips(propensity=THETA[:2]), ValueError,
                                     r"propensity has 2 entries \(positions 1\.\.2\) but "
                                     r"click\[6\] was logged at position 3"),
    "ips-propensity-zero": Case(lambda: _ips(propensity=[1.0, 0.0, 0.3]), ValueError,
                                r"propensity must lie in \(0, 1\] .*propensity\[1\] \(position 2\) "
                                r"= 0\.0"),
    "ips-propensity-above-one": Case(lambda: _ips(propensity=[1.0, 1.5, 0.3]), ValueError,
                                     r"propensity\[1\] \(position 2\) = 1\.5"),
    "ips-clip-zero": Case(lambda: _ips(clip=0.0), ValueError, r"clip must be > 0"),
    "ips-discount-name": Case(lambda: _ips(discount="log"), ValueError,
                              r"discount must be 'log2' or an array of discounts per rank, "
                              r"got 'log'"),
    "ips-ties": Case(lambda: _ips(ties="random"), ValueError,
                     r"ties must be 'average' .*got 'random'"),
    "ips-score-rows": Case(lambda: _ips(y_score=SCORE[:-1]), ValueError,
                           r"y_score has 11 rows but click has 12"),
    "ips-score-nan": Case(lambda: _ips(y_score=_with(SCORE, 7, np.nan)), ValueError,
                          r"y_score must be finite; .*first at index 7: nan"),
    "ips-score-complex": Case(lambda: _ips(y_score=SCORE + 0j), TypeError,
                              r"y_score must contain real numbers, got complex"),
    "ips-no-position": Case(lambda: _ips(position=None), TypeError,
                            r"position is required: the logged display rank of each row"),
    "ips-k-zero": Case(lambda: _ips(k=0), ValueError, r"k must be >= 1, got 0"),
    "ips-k-beyond-int64": Case(lambda: _ips(k=10**30), ValueError,
                               r"k must be <= 9223372036854775807, got 10{30}"),
    "ips-dcg-click-text": Case(lambda: _ips(ips_dcg, click=np.array(["a"] * 12)), TypeError,
                               r"click must contain numbers, got dtype <U1"),
    "ips-groups-twice": Case(lambda: _ips(offsets=[0, 6, 12]), ValueError,
                             r"pass only one of qid, group or offsets"),
    "ips-empty-option": Case(lambda: _ips(empty="zero"), ValueError, r"empty.*'zero'"),
    # ---------------------------------------------------------------- simulation
    "pbm-examination-negative": Case(lambda: simulate_pbm(LABELS, group=[3, 3],
                                                          examination=[1.0, -0.5, 0.2]),
                                     ValueError, r"examination\[1\] = -0\.5"),
    "pbm-sessions-zero": Case(lambda: simulate_pbm(LABELS, group=[3, 3], n_sessions=0),
                              ValueError, r"n_sessions must be >= 1, got 0"),
    "pbm-temperature-alone": Case(lambda: simulate_pbm(LABELS, group=[3, 3], temperature=1.0),
                                  ValueError, r"temperature needs logging_scores"),
    "pbm-logging-scores-rows": Case(lambda: simulate_pbm(LABELS, group=[3, 3],
                                                         logging_scores=[1.0, 2.0]),
                                    ValueError, r"logging_scores has 2 rows but labels has 6"),
    "cascade-labels-complex": Case(lambda: simulate_cascade(LABELS + 0j, group=[3, 3]),
                                   TypeError, r"labels must contain real numbers, got complex"),
    "cascade-max-position-zero": Case(lambda: simulate_cascade(LABELS, group=[3, 3],
                                                               max_position=0),
                                      ValueError, r"max_position must be >= 1, got 0"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_click_input_is_refused_naming_the_argument_and_value(name):
    case = CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(case.exc, match=case.match):
            case.call()


def test_a_blank_position_cell_names_the_column_and_line(tmp_path):
    csv = tmp_path / "log.csv"
    csv.write_text("qid,label,pos,f1\n1,0,1,0.5\n1,1,,0.2\n2,0,1,0.1\n")
    frame = pd.read_csv(csv)
    with pytest.raises(ValueError, match=r"log\.csv': position column 'pos' has 1 missing "
                                         r"value\(s\), the first at line 3"):
        from_frame(frame, labels={"__position__": "pos"}, source=csv)
    with pytest.raises(ValueError, match=r"position column 'pos' .*the first at row 1"):
        from_frame(frame, labels={"__position__": "pos"})


def test_em_on_a_fixed_order_is_refused_and_a_varied_order_is_estimated():
    """The PBM identifies theta_p / theta_1 only through pairs shown at several positions."""
    rng = np.random.default_rng(0)
    theta = np.array([1.0, 0.6, 0.3])
    gamma = np.array([0.8, 0.5, 0.2])
    n = 4000
    # a stochastic logger: each list shows the 3 documents in a random order
    order = np.argsort(rng.random((n, 3)), axis=1)
    doc = order.reshape(-1)
    pos = np.tile([1, 2, 3], n)
    click = (rng.random(3 * n) < theta[pos - 1] * gamma[doc]).astype(float)
    qid = np.repeat(np.arange(n), 3)
    est = estimate_propensity_em(click, pos, doc, qid=qid)
    assert est.converged
    np.testing.assert_allclose(est.propensity, theta, atol=0.05)
    # the same clicks with the order fixed (doc == position - 1): refused, not "converged"
    fixed = pos - 1
    with pytest.raises(ValueError, match="not identifiable"):
        estimate_propensity_em(click, pos, fixed, qid=qid)


def test_positions_linked_to_none_are_nan_with_a_warning():
    # lists of 3; pairs 0/1 swap between positions 1 and 2, pair 2 is always at position 3
    n = 200
    pos = np.tile([1, 2, 3, 2, 1, 3], n)
    doc = np.tile([0, 1, 2, 0, 1, 2], n)
    rng = np.random.default_rng(1)
    click = (rng.random(pos.size) < 0.3).astype(float)
    with pytest.warns(UserWarning, match=r"positions \[3\] share no query-document pair with "
                                         r"position 1"):
        est = estimate_propensity_em(click, pos, doc, qid=np.repeat(np.arange(2 * n), 3))
    assert est.propensity[0] == 1.0 and math.isfinite(est.propensity[1])
    assert math.isnan(est.propensity[2])


def test_a_run_with_em_propensities_on_a_fixed_order_is_refused_before_training(tmp_path, capsys):
    import yaml

    from ltr.cli import main

    rng = np.random.default_rng(0)
    n_q, docs = 30, 4
    frame = pd.DataFrame({
        "qid": np.repeat(np.arange(n_q), docs),
        "label": rng.integers(0, 3, n_q * docs),
        "pos": np.tile(np.arange(1, docs + 1), n_q),
        "click": (rng.random(n_q * docs) < 0.3).astype(int),
        "doc": np.arange(n_q * docs),  # each pair in one list only: the order never varies
        "f1": rng.normal(size=n_q * docs), "f2": rng.normal(size=n_q * docs),
    })
    frame.to_csv(tmp_path / "log.csv", index=False)
    cfg = {"seed": 0,
           "data": {"source": "csv", "train": str(tmp_path / "log.csv"), "position": "pos",
                    "click": "click", "doc": "doc", "split": {"valid": 0.2, "test": 0.2}},
           "model": {"n_estimators": 2, "num_leaves": 4, "min_child_samples": 2, "n_jobs": 1,
                     "objective": "native", "k": 5},
           "evaluation": {"ips": {"propensity": "em"}},
           "output": {"runs_dir": str(tmp_path / "runs"), "name": "em"}}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
    rc = main(["train", str(tmp_path / "c.yaml")])
    err = capsys.readouterr().err
    assert rc == 1, err
    assert "evaluation.ips.propensity: em on the training clicks: doc: each of the" in err, err
    assert "not identifiable" in err
    runs = tmp_path / "runs"
    assert not runs.exists() or not any(runs.iterdir())
