"""One-line notices for long phases, and the progress bar of ``ltr tune``'s search.

Library code prints nothing.  A phase that takes more than a few seconds and
has no progress bar of its own (a hyper-parameter search on several processes,
the shuffle of a cluster run, permutation importance off a terminal) logs one
line on the :data:`notice` logger (``ltr.notice``) when it starts.  The
``ltr`` command shows those lines on stderr (``ltr: <line>``); a run folder's
``run.log`` records them too; a Python caller sees them only if it configures
logging.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from ltr._compat import import_tqdm

__all__ = ["NOTICE_LOGGER", "SearchProgress", "notice", "search_size"]

#: Name of the logger of phase notices (the CLI shows its INFO records on stderr).
NOTICE_LOGGER = "ltr.notice"

notice = logging.getLogger(NOTICE_LOGGER)


def search_size(method: str, space: Mapping[str, Any], n_iter: int, random_state: Any) -> int:
    """Return the number of candidates a grid or random search will try.

    Parameters
    ----------
    method : {'grid', 'random'}
    space : mapping
        The parameter grid, or the distributions of a random search.
    n_iter : int
        Draws of a random search (fewer when every entry is a list with fewer
        combinations, as scikit-learn does).
    random_state : int or None

    Returns
    -------
    int

    Examples
    --------
    >>> search_size("grid", {"a": [1, 2], "b": [3, 4, 5]}, 10, 0)
    6
    >>> search_size("random", {"a": [1, 2]}, 10, 0)
    2
    """
    from sklearn.model_selection import ParameterGrid, ParameterSampler

    if method == "grid":
        return len(ParameterGrid(dict(space)))
    return len(ParameterSampler(dict(space), n_iter=n_iter, random_state=random_state))


class SearchProgress:
    """A scorer that ticks a tqdm bar once per scored fit, then scores as *scorer* does.

    ``GridSearchCV`` scores every (candidate, fold) fit exactly once, so the bar
    counts fits.  Only a search in this process (``n_jobs=1``) moves the bar;
    metadata routing (``qid``) goes to the wrapped scorer unchanged.

    Parameters
    ----------
    scorer : callable
        ``scorer(estimator, X, y, **kwargs) -> float`` with
        ``get_metadata_routing``.
    total : int
        Fits to expect (candidates x folds).
    show : bool
        Draw the bar (False: a silent pass-through).
    """

    def __init__(self, scorer: Any, total: int, show: bool) -> None:
        self.scorer = scorer
        self.total = total
        self.show = show
        self.bar: Any = None

    def start(self) -> None:
        """Draw the bar (call it when the search starts)."""
        self.bar = import_tqdm()(total=self.total, desc="search", unit="fit",
                                 disable=not self.show, leave=False)

    def __call__(self, estimator: Any, X: Any, y: Any = None, **kwargs: Any) -> Any:
        """Score one fit with the wrapped scorer and advance the bar."""
        try:
            return self.scorer(estimator, X, y, **kwargs)
        finally:
            if self.bar is not None:
                self.bar.update(1)

    def get_metadata_routing(self) -> Any:
        """Return the wrapped scorer's metadata routing (``qid`` requests)."""
        return self.scorer.get_metadata_routing()

    def close(self) -> None:
        """Close the bar."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def __getstate__(self) -> dict[str, Any]:
        # a worker process gets the scorer alone: a live bar holds a lock and a stream
        return {**self.__dict__, "bar": None}
