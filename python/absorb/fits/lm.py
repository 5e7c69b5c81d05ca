"""The second-order engine: variable projection + Levenberg–Marquardt for one residual-free block.

A residual-free block h(x) = V_down H(x) + c_down is *separable*: the output weights
(V_down, c_down) enter linearly. Variable projection (Golub–Pereyra) eliminates them: for the
inner weights θ = (V_up, [V_gate], [c_up]) put Hs = √ω ⊙ [H(X), 1] (per-row weights ω),
Ts = √ω ⊙ T and

    r(θ) = P(θ) Ts − Ts,   P = Hs Hs⁺ (orthogonal projector on the span of Hs),

the residual at the optimal output layer. LM (:mod:`absorb.marquardt`) minimizes
½‖r(θ)‖² with Kaufman's Jacobian J = P⊥ ∂Hs/∂θ · V_downᵀ, exact at zero residual, where
convergence is then quadratic. Columns of J for a parameter of unit i, as an (m, d) block:

    V_up[i,k]:   √ω σ'(Z_i) x_k ⊗ V_down[:,i]        (gated: g(Zg_i) x_k)
    c_up[i]:     √ω σ'(Z_i)     ⊗ V_down[:,i]        (gated: g(Zg_i))
    V_gate[i,k]: √ω g'(Zg_i) Z_i x_k ⊗ V_down[:,i]

built for all units at once (one broadcast product) and projected with one pair of matrix
products. ``aux_linear`` adds a free linear term L x to the output layer (extra columns √ω X of
Hs): the fit of the *augmented* model is a continuation aid (see :mod:`absorb.fits.fit`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares

from absorb.errors import AbsorbError
from absorb.fits.units import Array, UnitFunction
from absorb.marquardt import marquardt

__all__ = ["MAX_JACOBIAN_BYTES", "Deadline", "VarPro"]

#: LM's factors and normal equations are refused above this size (use ``engine="adam"``).
MAX_JACOBIAN_BYTES = 1 << 30
#: A training cost ½Σω‖h − f‖² (Σω‖f‖² = 1) at or below this is a fit at round-off (relative
#: error ~1e-12): no further move can improve it in a way the held-out errors would show.
ROUND_OFF_COST = 1e-24


class Deadline(Exception):
    """Raised inside the residual function when the time budget is spent."""


@dataclass
class _State:
    theta: Array
    R: Array  # (m, d) projected residual
    lin: Array  # (w + extra, d): [V_downᵀ; c_down; Lᵀ]
    Q: Array  # orthonormal basis of the span of Hs
    Z: Array
    D: Array  # σ'(Z), or g'(Zg) when gated
    Gv: Array | None  # g(Zg) when gated


class VarPro:
    """Separable least squares for a residual-free block (see the module docstring)."""

    def __init__(
        self,
        unit: UnitFunction,
        X: Array,
        T: Array,
        sqrt_weight: Array,
        *,
        width: int,
        gated: bool,
        up_bias: bool,
        down_bias: bool,
        aux_linear: bool = False,
    ) -> None:
        self.unit = unit
        self.X = np.ascontiguousarray(X, dtype=np.float64)
        self.m, self.d = (int(s) for s in self.X.shape)
        self.d_out = int(T.shape[1])
        self.w, self.gated, self.up_bias, self.down_bias = width, gated, up_bias, down_bias
        self.sw = np.asarray(sqrt_weight, dtype=np.float64).reshape(-1, 1)
        self.Ts = T * self.sw
        extra = [self.sw] if down_bias else []
        if aux_linear:
            extra.append(self.X * self.sw)
        self.extra = np.hstack(extra) if extra else np.empty((self.m, 0))
        self.n_params = width * self.d * (2 if gated else 1) + (width if up_bias else 0)
        need = 8 * (2 * self.m * self.n_params + 3 * self.n_params**2)
        if need > MAX_JACOBIAN_BYTES:
            raise AbsorbError(f"the LM engine's normal equations would need {need / 2**30:.1f} "
                              "GiB (samples × parameters); use --engine adam or fewer --samples")
        self._state: _State | None = None
        self.best_cost = math.inf
        self.best_theta: Array | None = None
        self.deadline = math.inf

    # ----------------------------------------------------------------------------------------
    # parameters

    def split(self, theta: Array) -> dict[str, Array]:
        """θ as named arrays V_up (w×d), V_gate (w×d, gated), c_up (w, with biases)."""
        w, d = self.w, self.d
        out = {"V_up": theta[: w * d].reshape(w, d)}
        pos = w * d
        if self.gated:
            out["V_gate"] = theta[pos : pos + w * d].reshape(w, d)
            pos += w * d
        if self.up_bias:
            out["c_up"] = theta[pos : pos + w]
        return out

    def join(self, params: dict[str, Array]) -> Array:
        parts = [params["V_up"].ravel()]
        if self.gated:
            parts.append(params["V_gate"].ravel())
        if self.up_bias:
            parts.append(params["c_up"].ravel())
        return np.concatenate(parts).astype(np.float64)

    def params(self, theta: Array) -> dict[str, Array]:
        """All weights of the block at θ, with the optimal output layer."""
        st = self.state(theta)
        out = {k: v.copy() for k, v in self.split(theta).items()}
        out["V_down"] = st.lin[: self.w].T.copy()
        if self.down_bias:
            out["c_down"] = st.lin[self.w].copy()
        return out

    # ----------------------------------------------------------------------------------------
    # residual and Jacobian

    def _preactivation(self, p: dict[str, Array]) -> Array:
        """Z = X V_upᵀ (+ c_up)."""
        Z: Array = self.X @ p["V_up"].T
        if self.up_bias:
            Z += p["c_up"]
        return Z

    def state(self, theta: Array) -> _State:
        st = self._state
        if st is not None and np.array_equal(st.theta, theta):
            return st
        p = self.split(theta)
        Z = self._preactivation(p)
        H, D = np.empty_like(Z), np.empty_like(Z)
        Gv = None
        if self.gated:
            Zg = self.X @ p["V_gate"].T
            Gv = np.empty_like(Zg)
            self.unit(Zg, Gv, D)
            np.multiply(Gv, Z, out=H)
        else:
            self.unit(Z, H, D)
        Hs = np.hstack([H * self.sw, self.extra])
        U, s, Vt = np.linalg.svd(Hs, full_matrices=False)
        # numerical rank: dead or duplicate units leave Hs rank-deficient
        keep = s > (s[0] if s.size else 0.0) * 1e-13 * max(Hs.shape)
        Q = U[:, keep]
        coef = Q.T @ self.Ts
        R = Q @ coef - self.Ts
        lin = (Vt[keep].T / s[keep]) @ coef
        st = _State(theta.copy(), R, lin, Q, Z, D, Gv)
        self._state = st
        return st

    def cost(self, theta: Array) -> float:
        """½‖r(θ)‖² = ½ Σ ω ‖h − f‖² at the optimal output layer."""
        return 0.5 * float(np.sum(self.state(theta).R ** 2))

    def residual(self, theta: Array) -> Array:
        if time.perf_counter() > self.deadline:
            raise Deadline
        st = self.state(theta)
        c = 0.5 * float(np.sum(st.R**2))
        if c < self.best_cost:
            self.best_cost, self.best_theta = c, theta.copy()
        return st.R.ravel()

    def _factors(self, st: _State) -> Array:
        """A[m, i, c]: ∂(√ω H[m, i])/∂(parameter c of unit i), before the projection.

        Columns c per unit: V_up[i, :] (ungated: σ'(Z) x; gated: g(Zg) x), then V_gate[i, :]
        (g'(Zg) Z x), then c_up[i]; the Jacobian entry of output j is A[m, i, c] V_down[j, i].
        """
        sw = self.sw
        if self.gated:
            assert st.Gv is not None  # set whenever gated
            groups = [(st.Gv, self.X), (st.D * st.Z, self.X)]
            bias_factor = st.Gv
        else:
            groups = [(st.D, self.X)]
            bias_factor = st.D
        parts = [(F * sw)[:, :, None] * inp[:, None, :] for F, inp in groups]
        if self.up_bias:
            parts.append((bias_factor * sw)[:, :, None])
        return np.concatenate(parts, axis=2)

    def _column_order(self) -> Array:
        """Position in θ of the Jacobian column (i, c) of :meth:`_factors`."""
        w, d = self.w, self.d
        cols = []
        unit = np.arange(w)[:, None]
        cols.append(unit * d + np.arange(d)[None, :])
        pos = w * d
        if self.gated:
            cols.append(pos + unit * d + np.arange(d)[None, :])
            pos += w * d
        if self.up_bias:
            cols.append(pos + unit)
        return np.concatenate(cols, axis=1).ravel()

    def jacobian(self, theta: Array) -> Array:
        """Kaufman's Jacobian of :meth:`residual`, dense, (m·d) × |θ| (columns in θ's order)."""
        st = self.state(theta)
        A = self._factors(st)
        Vd = st.lin[: self.w]  # (w, d_out) = V_downᵀ
        J = (Vd.T[None, :, :, None] * A[:, None, :, :]).reshape(self.m, -1)
        J -= st.Q @ (st.Q.T @ J)
        J = J.reshape(self.m * self.d_out, -1)
        out = np.empty_like(J)
        out[:, self._column_order()] = J
        return out

    def normal_equations(self, theta: Array) -> tuple[Array, Array]:
        """JᵀJ and Jᵀr without forming J: with Ap = P⊥A (projection along the samples),
        J[(m,j),(i,c)] = Ap[m,i,c] V_down[j,i], so JᵀJ = (ApᵀAp) ⊙ (V_downᵀV_down ⊗ 1) and
        Jᵀr[(i,c)] = Σ_m Ap[m,i,c] (R V_down)[m,i]: d_out times fewer flops than J itself."""
        st = self.state(theta)
        A = self._factors(st)
        kc = A.shape[2]
        A2 = A.reshape(self.m, -1)
        A2 -= st.Q @ (st.Q.T @ A2)
        Vd = st.lin[: self.w]
        M = Vd @ Vd.T
        JtJ = (A2.T @ A2) * np.kron(M, np.ones((kc, kc)))
        g = np.einsum("mic,mi->ic", A, st.R @ Vd.T).ravel()
        order = self._column_order()
        out = np.empty_like(JtJ)
        out[np.ix_(order, order)] = JtJ
        grad = np.empty_like(g)
        grad[order] = g
        return out, grad

    # ----------------------------------------------------------------------------------------
    # solvers

    def levenberg_marquardt(self, theta: Array, max_iter: int, solver: str = "normal"
                            ) -> Array:
        """LM from θ; returns the best θ seen, also when the deadline interrupts it.

        ``solver="normal"`` (default): :func:`absorb.marquardt.marquardt` on the structured
        normal equations (:meth:`normal_equations`), deterministic;
        ``solver="scipy"``: ``scipy.optimize.least_squares`` (MINPACK ``lm``, or ``trf`` when
        there are fewer residuals than parameters) on the dense :meth:`jacobian` — the same
        iteration, but its QR of the (m·d) × |θ| Jacobian costs d times more (measured: ~1 s
        per iteration at d = 8, n = 32 against ~0.07 s), and MINPACK is not reproducible
        within a process (see :mod:`absorb.marquardt`): a reference, not the default.
        """
        self.best_cost, self.best_theta = math.inf, None
        try:
            if solver == "scipy":
                method = "lm" if self.m * self.d_out >= self.n_params else "trf"
                res = least_squares(self.residual, theta, jac=self.jacobian, method=method,
                                    max_nfev=max_iter, ftol=1e-15, xtol=1e-15, gtol=1e-15)
                theta = np.asarray(res.x, dtype=np.float64)
            else:
                theta = marquardt(lambda th: 0.5 * float(np.sum(self.residual(th) ** 2)),
                                  self.normal_equations, theta, max_iter)
        except Deadline:
            pass
        if self.best_theta is not None and self.best_cost < self.cost(theta):
            return self.best_theta
        return theta

    def _reflected(self, theta: Array, units: Array) -> Array:
        """θ with the units ``units`` reflected: ungated (V_up[i], c_up[i]) → −(V_up[i], c_up[i]),
        gated V_gate[i] → −V_gate[i] (the gate's half-space flips, the linear factor stays)."""
        p = {k: v.copy() for k, v in self.split(theta).items()}
        if self.gated:
            p["V_gate"][units] *= -1
        else:
            p["V_up"][units] *= -1
            if self.up_bias:
                p["c_up"][units] *= -1
        return self.join(p)

    def _columns(self, p: dict[str, Array], sign: float) -> Array:
        """H(X) with every unit reflected (``sign`` = −1) or not (+1): σ(±Z), or g(±Zg) ⊙ Z."""
        Z = self._preactivation(p)
        H, D = np.empty_like(Z), np.empty_like(Z)
        if self.gated:
            G = np.empty_like(Z)
            self.unit(sign * (self.X @ p["V_gate"].T), G, D)
            np.multiply(G, Z, out=H)
        else:
            self.unit(sign * Z, H, D)
        return H

    def _flip_costs(self, theta: Array) -> Array:
        """The cost after reflecting each single unit, all w at once: the reflected unit's column
        of Hs replaces column i, and each of the w least-squares problems is solved from its
        Gram matrix (a batched (k×k) solve). Normal equations are accurate enough to *rank* the
        moves; the chosen move is re-evaluated exactly."""
        p = self.split(theta)
        Hs = np.hstack([self._columns(p, 1.0) * self.sw, self.extra])
        C = self._columns(p, -1.0) * self.sw  # the reflected columns
        w, k = self.w, Hs.shape[1]
        G = np.broadcast_to(Hs.T @ Hs, (w, k, k)).copy()
        cross = C.T @ Hs  # (w, k): row i = c_iᵀ Hs
        idx = np.arange(w)
        G[idx, idx, :] = cross
        G[idx, :, idx] = cross
        G[idx, idx, idx] = np.sum(C * C, axis=0)
        b = np.broadcast_to(Hs.T @ self.Ts, (w, k, self.d_out)).copy()
        b[idx, idx, :] = C.T @ self.Ts
        scale = np.trace(G, axis1=1, axis2=2) / k
        G[:, np.arange(k), np.arange(k)] += (1e-12 * scale + 1e-300)[:, None]
        sol = np.linalg.solve(G, b)
        explained: Array = np.einsum("wkd,wkd->w", b, sol)
        return 0.5 * (float(np.sum(self.Ts**2)) - explained)

    def _descend_reflections(self, theta: Array) -> tuple[Array, float]:
        """Greedy: apply the single-unit reflection that lowers the cost most, until none does."""
        best = self.cost(theta)
        while True:
            order = np.argsort(self._flip_costs(theta))
            cand = self._reflected(theta, order[:1])
            c = self.cost(cand)
            if not c < best:
                return theta, best
            theta, best = cand, c

    def reflection_search(self, theta: Array, rng: np.random.Generator, kicks: int) -> Array:
        """Iterated local search over unit reflections u_i → −u_i (the output layer re-solved
        for each): greedy descent, then ``kicks`` random 3-unit reflections each followed by a
        descent, keeping the best. A discrete move a gradient method cannot make (it would have
        to rotate u_i through other hyperplanes); for gated units the gate's half-space flips
        (g(−z) = g(z) − z for the odd-part-linear gates, so the unit changes by a quadratic
        form). It uses nothing of the target's weights."""
        theta, best = self._descend_reflections(theta)
        for _ in range(kicks):
            if time.perf_counter() > self.deadline or best == 0.0:
                break
            units = rng.choice(self.w, size=min(3, self.w), replace=False)
            cand, c = self._descend_reflections(self._reflected(theta, units))
            if c < best:
                theta, best = cand, c
        return theta

    def redraw_search(self, theta: Array, rng: np.random.Generator, tries: int,
                      steps: int) -> Array:
        """Iterated local search over single units: unit i (cycling) gets fresh inner weights at
        fan-in scale (V_up[i], V_gate[i] ~ N(0, 1/d), c_up[i] ~ N(0, ¼)), the whole block is
        re-fitted by LM (and the reflection search), and the move is kept when the cost drops.

        Why: from random starts most failed restarts have all units but one in place (measured
        on residual-free ReGLU targets, d = 2, n = 3: the per-restart recovery rate goes from
        0.14 to 0.65 with 2n re-draws); a fresh restart throws the good units away. Stops at
        ``tries`` moves, at round-off (:data:`ROUND_OFF_COST`) or at the deadline. Uses nothing
        of the target's weights."""
        best = self.cost(theta)
        for it in range(tries):
            if time.perf_counter() > self.deadline or best <= ROUND_OFF_COST:
                break
            i = it % self.w
            p = {k: v.copy() for k, v in self.split(theta).items()}
            p["V_up"][i] = rng.standard_normal(self.d) / math.sqrt(self.d)
            if self.gated:
                p["V_gate"][i] = rng.standard_normal(self.d) / math.sqrt(self.d)
            if self.up_bias:
                p["c_up"][i] = 0.5 * rng.standard_normal()
            cand = self.levenberg_marquardt(self.join(p), steps)
            cand = self.levenberg_marquardt(self.reflection_search(cand, rng, self.w), steps)
            c = self.cost(cand)
            if c < best:
                theta, best = cand, c
        return theta
