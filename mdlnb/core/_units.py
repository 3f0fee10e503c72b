"""Nats ↔ bits for every result that carries a codelength.

A result class defines ``total_nats`` and ``n`` (examples coded); mixing in
:class:`Codelength` gives the other units, so each is derived in one place.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

LN2 = math.log(2.0)


def per_example_bits(nats, n):
    """Bits per example of a codelength of ``nats`` over ``n`` examples:
    ``nats / n / ln 2`` (a number, an array or a Series)."""
    return nats / n / LN2


class Codelength:
    """Mixin: ``total_bits``, ``nats_per_example``, ``bits_per_example``."""

    __slots__ = ()

    if TYPE_CHECKING:  # what a result class defines, as a field or a property

        @property
        def total_nats(self) -> float: ...

        @property
        def n(self) -> int: ...

    @property
    def total_bits(self) -> float:
        """The codelength in bits (nats / ln 2)."""
        return self.total_nats / LN2

    @property
    def nats_per_example(self) -> float:
        return self.total_nats / self.n

    @property
    def bits_per_example(self) -> float:
        return self.total_bits / self.n
