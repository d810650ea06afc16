"""Ranking data: one container and loaders for LETOR/LibSVM and pandas.

:class:`RankingData` holds a dense feature matrix, graded labels and one
integer query id per row with the rows of each query contiguous, so that
``data.offsets`` (``int64``, length ``n_queries + 1``) is what every other
module consumes.  It is filled by

* :func:`load_letor` -- LibSVM/LETOR text files, with ``qid:`` fields or with
  LightGBM's side ``.query`` file of group sizes; :func:`load_letor_files`
  loads the files of one run with one feature base and count;
* :func:`from_frame` -- a pandas DataFrame (for example from :func:`read_table`
  on a parquet/csv file);
* :func:`ltr.synthetic.make_ranking` -- a deterministic synthetic set shaped
  like MSLR-WEB10K (it imports this package, never the reverse).

Implementation: ``_container`` (the container), ``_letor`` (LibSVM/LETOR) and
``_frame`` (pandas); this package re-exports the public names.
"""

from __future__ import annotations

from ltr.datasets._container import RankingData
from ltr.datasets._frame import from_frame, read_table
from ltr.datasets._letor import MAX_AUTO_FEATURES, letor_layout, load_letor, load_letor_files

__all__ = [
    "MAX_AUTO_FEATURES",
    "RankingData",
    "from_frame",
    "letor_layout",
    "load_letor",
    "load_letor_files",
    "read_table",
]
