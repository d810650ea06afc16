"""Position-biased clicks.

Simulation and propensity estimation (:mod:`._simulate`, :mod:`._propensity`,
:mod:`._cascade`)
and IPS metrics (:mod:`.ips`).
"""

from __future__ import annotations

from ltr.clicks._cascade import CascadeEstimate, estimate_propensity_cascade
from ltr.clicks._propensity import estimate_propensity_em, estimate_propensity_swap
from ltr.clicks._simulate import (
    DEFAULT_CLICK_LADDER,
    ClickLog,
    PropensityEstimate,
    simulate_cascade,
    simulate_pbm,
)
from ltr.clicks.ips import (
    ips_dcg,
    ips_ndcg,
)

__all__ = [
    "DEFAULT_CLICK_LADDER",
    "CascadeEstimate",
    "ClickLog",
    "PropensityEstimate",
    "estimate_propensity_cascade",
    "estimate_propensity_em",
    "estimate_propensity_swap",
    "ips_dcg",
    "ips_ndcg",
    "simulate_cascade",
    "simulate_pbm",
]
