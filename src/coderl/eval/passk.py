"""pass@k, LiveCodeBench's way: the unbiased estimator 1 - C(n-c, k) / C(n, k) per problem,
averaged over problems (pass@1 is the mean of c/n)."""

from __future__ import annotations

import math


def pass_at_k(n: int, c: int, k: int) -> float:
    if not 0 < k <= n or not 0 <= c <= n:
        raise ValueError(f"need 0 < k <= n and 0 <= c <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def mean_pass_at_k(counts: list[tuple[int, int]], k: int) -> float | None:
    """Mean over problems of pass@k, over the problems with at least k samples; None if none."""
    values = [pass_at_k(n, c, k) for n, c in counts if n >= k]
    return sum(values) / len(values) if values else None
