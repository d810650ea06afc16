"""Numba kernels over flat arrays and ``int64`` query offsets.

Nothing here validates input or imports from the rest of ``ltr``: the public
wrappers in :mod:`ltr.metrics` and :mod:`ltr.objectives` do that.
"""
