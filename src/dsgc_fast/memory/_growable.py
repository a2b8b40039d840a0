"""``Growable``: an append-only NumPy array whose capacity doubles, so appending is amortized O(1)."""

from __future__ import annotations

from typing import Any

import numpy as np


class Growable:
    """An append-only NumPy array (1-D, or 2-D with a fixed width); capacity doubles."""

    def __init__(self, dtype: Any, width: int | None = None) -> None:
        self._data = np.empty((16,) if width is None else (16, width), dtype=dtype)
        self.n = 0

    def append(self, value: Any) -> None:
        if self.n == self._data.shape[0]:
            grown = np.empty((2 * self.n, *self._data.shape[1:]), dtype=self._data.dtype)
            grown[: self.n] = self._data
            self._data = grown
        self._data[self.n] = value
        self.n += 1

    def view(self) -> np.ndarray:
        return self._data[: self.n]
