"""Levenberg–Marquardt on the normal equations: the one nonlinear least-squares loop of absorb.

Minimizes f(θ) = ½‖r(θ)‖² from θ₀. Each iteration takes JᵀJ and g = Jᵀr at θ and solves

    (JᵀJ + λ D) δ = −g,   D = diag of the running maximum of diag(JᵀJ)  (Moré's scaling),

accepts δ when the gain ratio ρ = (f(θ) − f(θ + δ)) / (−gᵀδ − ½ δᵀJᵀJδ) is positive and then
shrinks λ by max(1/3, 1 − (2ρ − 1)³), else grows it by ν = 2, 4, 8, … (Nielsen's update). It
stops at f = 0, after three accepted steps that gain less than 1e-15·f, when a step is below
1e-15 relative to θ, or when λ passes 1e20 (also when the damped system stays singular).

Why our own loop rather than ``scipy.optimize.least_squares(method="lm")``: MINPACK's result
depends on the contents of freed heap memory (measured with scipy 1.17: the same residuals and
Jacobians at every evaluation, yet a different step once 80 kB blocks were filled with −1 and
freed before the call), so the same ``--seed`` gave other numbers after other work in the same
process. Every operation here is a deterministic numpy/LAPACK call on the caller's arrays.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]

__all__ = ["marquardt"]


def marquardt(cost: Callable[[Array], float],
              normal_equations: Callable[[Array], tuple[Array, Array]],
              theta: Array, max_iter: int) -> Array:
    """Run at most ``max_iter`` iterations from ``theta`` and return the last accepted θ.

    ``cost(θ)`` is ½‖r(θ)‖²; ``normal_equations(θ)`` returns (JᵀJ, Jᵀr) at θ. Callers that
    need an interruption raise from ``cost`` (the exception propagates)."""
    f = cost(theta)
    lam, nu = 1e-3, 2.0
    scale = np.zeros(theta.size)
    stall = 0
    for _ in range(max_iter):
        if f == 0.0:
            break
        JtJ, g = normal_equations(theta)
        scale = np.maximum(scale, np.diag(JtJ))
        D = np.maximum(scale, 1e-30 * max(float(np.max(scale)), 1e-300))
        while True:
            step: Array | None
            try:
                step = -np.asarray(np.linalg.solve(JtJ + lam * np.diag(D), g), np.float64)
            except np.linalg.LinAlgError:
                step = None
            if step is not None:
                new = theta + step
                new_f = cost(new)
                predicted = -float(g @ step) - 0.5 * float(step @ JtJ @ step)
                rho = (f - new_f) / predicted if predicted > 0 else -1.0
                if rho > 0:
                    stall = stall + 1 if f - new_f <= 1e-15 * f else 0
                    theta, f = new, new_f
                    lam *= max(1 / 3, 1 - (2 * float(rho) - 1) ** 3)
                    nu = 2.0
                    moved = float(np.max(np.abs(step)))
                    break
            lam *= nu
            nu *= 2
            if lam > 1e20:
                return theta
        if stall >= 3 or moved <= 1e-15 * (
                1 + float(np.max(np.abs(theta)))):
            break
    return theta
