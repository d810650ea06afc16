"""Stage checkpoints: the run fingerprint, ``stages.json`` and loading completed stages.

With ``stage_dir`` every finished stage writes its model
(``stage_{i:02d}_k{k}.txt``/``.json``) and then ``stages.json``, both through
:func:`ltr._io.write_atomic`.  ``stages.json`` carries a fingerprint of the
run's settings and data; ``resume=True`` continues only a run with the same
fingerprint.  The data digest is computed only here, i.e. only when
checkpointing.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from pathlib import Path
from typing import Any

from ltr._io import digest_arrays, to_jsonable, write_atomic
from ltr.engines._objective import objective_fields
from ltr.engines._spec import TrainSpec

__all__ = ["STAGES_FORMAT", "file_sha256", "fingerprint", "load_completed", "write_stage"]

STAGES_FORMAT = "ltr.stages"


def fingerprint(spec: TrainSpec, params: dict[str, Any]) -> str:
    """SHA-256 of the run's settings and a digest of all its data.

    Parameters
    ----------
    spec : TrainSpec
        The validated request.
    params : dict
        The engine parameters of the run (adapter defaults merged with the user's).

    Returns
    -------
    str
        Hex digest; equal for runs that would train the same model.
    """
    settings = {
        "engine": spec.engine,
        "params": to_jsonable(params),
        "plan": spec.plan,
        "objective": None if spec.objective is None else objective_fields(spec.objective),
        "eval_at": spec.eval_at,
        "early_stopping_rounds": spec.early_stopping_rounds,
        "convention": spec.convention,
        "eval_sets": [ev.name for ev in spec.eval_sets],
        "feature_names": spec.feature_names,
    }
    if spec.categorical:  # only then: older runs keep their fingerprint
        settings["categorical"] = list(spec.categorical)
    arrays: list[Any] = []
    if spec.placement is None:
        arrays = [spec.X, spec.y, spec.offsets, spec.sample_weight, spec.position]
    else:  # rows on a cluster: the placement digests them where they live
        settings["placement"] = to_jsonable(spec.placement.settings())
    for ev in spec.eval_sets:
        arrays += [ev.X, ev.y, ev.offsets]
    h = hashlib.sha256(json.dumps(settings, sort_keys=True).encode())
    if spec.placement is not None:
        h.update(spec.placement.digest().encode())
    h.update(digest_arrays(*arrays).encode())
    return h.hexdigest()


def load_completed(stage_dir: Path, resume: bool, fingerprint: str) -> list[dict[str, Any]]:
    """Completed stage records in *stage_dir* (validated), or ``[]`` for a fresh folder.

    Parameters
    ----------
    stage_dir : Path
        The checkpoint folder.
    resume : bool
        Whether the caller asked to continue a run found there.
    fingerprint : str
        The current run's :func:`fingerprint`.

    Returns
    -------
    list of dict
        One record per completed stage (``k``, ``first_round``, ``n_rounds``,
        ``file``, ``evals``, ...).

    Raises
    ------
    ValueError
        When the folder holds a run and *resume* is False, holds a different
        run, or its ``stages.json`` is damaged.

    Warns
    -----
    RuntimeWarning
        When a listed stage file is missing or fails its checksum: that stage
        and the later ones are left out (resume recomputes them from the last
        intact stage), so a damaged file never reaches the engine's parser.
    """
    index = stage_dir / "stages.json"
    if not index.exists():
        return []
    if not resume:
        raise ValueError(
            f"stage_dir {str(stage_dir)!r} already holds stages of a run (stages.json); "
            "pass resume=True to continue it, or use an empty folder (nothing was overwritten)"
        )
    try:
        data = json.loads(index.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ValueError(f"{str(index)!r} is not valid JSON (damaged or truncated): {exc}") from exc
    if (
        not isinstance(data, dict)
        or data.get("format") != STAGES_FORMAT
        or (data.get("fingerprint") != fingerprint)
    ):
        raise ValueError(
            f"stage_dir {str(stage_dir)!r} was written by a different run (settings or data "
            "differ), so it cannot be resumed; use a new stage_dir or resume=False in an empty one"
        )
    stages = data.get("stages", [])
    keys = ("k", "first_round", "n_rounds", "file")
    if not isinstance(stages, list) or not all(
        isinstance(rec, dict) and all(key in rec for key in keys) for rec in stages
    ):
        raise ValueError(
            f"{str(index)!r} is damaged (its stage records are not what ltr writes); delete it "
            "and the stage files beside it to train the run from the start"
        )
    good: list[dict[str, Any]] = []
    for i, rec in enumerate(stages):
        path = stage_dir / str(rec["file"])
        problem = _stage_problem(path, rec.get("sha256"))
        if problem is not None:
            # the stages before it are intact: resume recomputes this one from them
            warnings.warn(
                f"stage file {str(path)!r} {problem}; resuming recomputes stage {i} "
                + (f"from stage {i - 1}" if i else "from the start"),
                RuntimeWarning,
                stacklevel=3,
            )
            break
        good.append(rec)
    return good


def file_sha256(text: str) -> str:
    """SHA-256 of a model text as written (UTF-8), the checksum kept beside it."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _stage_problem(path: Path, expected: Any) -> str | None:
    """Why a listed stage file cannot be used (missing, damaged), or None when it is intact."""
    if not path.exists():
        return "listed in stages.json is missing"
    if expected is None:  # written before checksums: the adapter's own text check applies
        return None
    actual = hashlib.sha256(path.read_bytes()).hexdigest()
    if actual != expected:
        return "is damaged or truncated (its checksum differs from stages.json)"
    return None


def write_stage(
    stage_dir: Path,
    engine: str,
    fingerprint: str,
    completed: list[dict[str, Any]],
    fname: str,
    model_text: str,
) -> None:
    """Write one stage's model file, then ``stages.json`` listing *completed*.

    Parameters
    ----------
    stage_dir : Path
        The checkpoint folder (exists).
    engine : str
        Engine name, recorded in ``stages.json``.
    fingerprint : str
        The run's :func:`fingerprint`.
    completed : list of dict
        All completed stage records, the new one last.
    fname : str
        File name of the new stage's model.
    model_text : str
        The engine's native model text.
    """
    write_atomic(stage_dir / fname, model_text)
    completed[-1]["sha256"] = file_sha256(model_text)
    write_atomic(
        stage_dir / "stages.json",
        json.dumps(
            {
                "format": STAGES_FORMAT,
                "engine": engine,
                "fingerprint": fingerprint,
                "stages": completed,
            },
            indent=1,
        ),
    )
