"""The base of every config section: unknown keys refused, defaults validated too."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["MAX_INT", "Section"]

#: Largest count a config accepts (the engines hold counts as int32).
MAX_INT = 2**31 - 1


class Section(BaseModel):
    """A config section (pydantic): unknown keys are errors, defaults are validated."""

    model_config = ConfigDict(extra="forbid", validate_default=True)
