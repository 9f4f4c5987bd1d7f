"""Seeds for the layer-1 estimators: one numpy ``Generator`` per fit, never global state."""

from __future__ import annotations

from typing import Any

import numpy as np


def as_generator(random_state: Any) -> np.random.Generator:
    """A numpy ``Generator`` from an int / None / ``Generator`` / legacy ``RandomState``."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**31 - 1))
    return np.random.default_rng(random_state)
