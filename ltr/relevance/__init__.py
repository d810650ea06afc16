"""Grade mappings: raw behaviour columns -> graded relevance labels per objective.

How raw behaviour becomes a grade is configuration, not code.  Two building
blocks cover the usual cases and combine per objective:

* :class:`ThresholdGrades` -- numeric value -> grade through sorted threshold
  bins (watch fraction, dwell time);
* :class:`CategoricalGrades` -- category -> grade through a table (share
  channel, follow/like, e-commerce event);
* :class:`GradeMapping` -- one objective: one or more ``column -> grader``
  rules combined by ``max`` (or ``sum``).

All three are callables returning ``float64`` grades and round-trip through
``to_dict()`` / ``from_dict()`` for YAML configs.  :data:`PRESETS` holds the
mappings used in the project's examples::

    watch     watch_fraction: < 0.3 -> 0, [0.3, 0.6) -> 1, [0.6, 1.0) -> 2, >= 1.0 (full view) -> 3
    share     share: none -> 0, copy_link -> 1, social -> 2
    follow    follow: none -> 0, like -> 1, follow -> 3
    ecommerce max(event: impression -> 1, click -> 2, cart -> 4, order_kept -> 5;
                  dwell_seconds: <= 30 -> 0, > 30 -> 3)

The watch preset decides the unspecified 30-60 % band as grade 1, and puts a
boundary value in the bin above it (exactly 60 % -> 2).

Examples
--------
>>> PRESETS["watch"]({"watch_fraction": [0.1, 0.3, 0.5, 0.75, 1.0]}).tolist()
[0.0, 1.0, 1.0, 2.0, 3.0]
>>> PRESETS["ecommerce"]({"event": ["click", "cart"], "dwell_seconds": [45.0, 2.0]}).tolist()
[3.0, 4.0]
"""

from __future__ import annotations

from ltr.relevance._graders import CategoricalGrades, ThresholdGrades
from ltr.relevance._mappings import PRESETS, GradeMapping, apply_mappings, from_dict

__all__ = [
    "PRESETS",
    "CategoricalGrades",
    "GradeMapping",
    "ThresholdGrades",
    "apply_mappings",
    "from_dict",
]
