"""The first-order engine: full-batch Adam (optionally with the output layer projected)."""

from __future__ import annotations

import math

import numpy as np

from absorb.fits.units import Array, UnitFunction

__all__ = ["AdamFit"]


class AdamFit:
    """Full-batch Adam on the per-scale-normalized squared error of a residual-free block.

    Parameters V_up (w×d), V_down (d×w), V_gate (w×d, gated), c_up (w), c_down (d). With
    Z = X V_upᵀ + c_up, ungated H = σ(Z), gated H = g(X V_gateᵀ) ⊙ Z, Y = H V_downᵀ + c_down,
    R = Y − T and the loss Σ_rows ω_m ‖R_m‖² (ω = per-row weights), the gradients are

        dY = 2ω ⊙ R,  ∇V_down = dYᵀH,  dH = dY V_down,
        ungated: dZ = dH ⊙ σ'(Z);  gated: dZ = dH ⊙ g(Z_g), dZ_g = dH ⊙ Z ⊙ g'(Z_g),
        ∇V_up = dZᵀX,  ∇V_gate = dZ_gᵀX,  ∇c_up = Σ_m dZ,  ∇c_down = Σ_m dY.

    ``project=True`` (variable projection): the output layer enters linearly, so at every step
    (V_down, c_down) is set to its weighted least-squares optimum for the current H (normal
    equations with a relative ridge), and Adam moves only the inner weights; by the
    envelope theorem the partial gradient above is then the gradient of the projected loss.
    This removes the slow bilinear coupling of the two layers (an exactly representable target
    is fitted to ~1e-9 instead of stalling at ~1e-2).

    All m×w and m×d buffers are allocated once. Matrix flops of a step: 10·m·d·w (plain; 14 gated)
    or 8·m·d·w + m·(w+1)² + (w+1)³/3 (projected; 12·m·d·w + … gated).
    """

    beta1 = 0.9
    beta2 = 0.999
    eps = 1e-8

    def __init__(
        self,
        unit: UnitFunction,
        X: Array,
        T: Array,
        row_weight: Array,
        params: dict[str, Array],
        dtype: type = np.float64,
        *,
        project: bool = False,
    ) -> None:
        self.unit = unit
        self.dtype = np.dtype(dtype)
        z = self.dtype
        self.X = np.ascontiguousarray(X, dtype=z)
        self.T = np.ascontiguousarray(T, dtype=z)
        omega = np.asarray(row_weight, dtype=np.float64)
        self.omega2 = (2 * omega).astype(z)[:, None]
        self.p = {k: np.array(v, dtype=z) for k, v in params.items()}
        self.gated = "V_gate" in self.p
        self.project = project
        m, d = int(self.X.shape[0]), int(self.X.shape[1])
        w = int(self.p["V_up"].shape[0])
        self.m, self.d, self.w = m, d, w
        self.Z = np.empty((m, w), z)
        self.H = np.empty((m, w), z)
        self.dH = np.empty((m, w), z)
        self.D = np.empty((m, w), z)  # σ'(Z), or g'(Z_g) when gated
        self.Zg = np.empty((m, w), z) if self.gated else None
        self.Gv = np.empty((m, w), z) if self.gated else None  # g(Z_g)
        self.Y = np.empty((m, d), z)
        self.dY = np.empty((m, d), z)
        self.trained = [k for k in self.p if not (project and k in ("V_down", "c_down"))]
        self.grad = {k: np.empty_like(self.p[k]) for k in self.trained}
        self.m1 = {k: np.zeros_like(self.p[k]) for k in self.trained}
        self.m2 = {k: np.zeros_like(self.p[k]) for k in self.trained}
        self.tmp = {k: np.empty_like(self.p[k]) for k in self.trained}
        if project:
            self.bias_col = "c_down" in self.p
            k = w + int(self.bias_col)
            self.sqrt_omega = np.sqrt(omega).astype(z)[:, None]
            self.Hs = np.empty((m, k), z)  # √ω ⊙ [H, 1]
            if self.bias_col:
                self.Hs[:, w] = self.sqrt_omega[:, 0]
            self.HsT_T = np.empty((k, d), z)
            self.Ts = self.T * self.sqrt_omega
            self.ridge = 1e-12 if z == np.float64 else 1e-6
        self.t = 0

    @property
    def flops_per_step(self) -> int:
        """Matrix flops of one step (BLAS work; the O(m·w) elementwise work is not counted)."""
        m, d, w = self.m, self.d, self.w
        if not self.project:
            return (14 if self.gated else 10) * m * d * w
        k = w + int(self.bias_col)
        return (12 if self.gated else 8) * m * d * w + m * k * k + k**3 // 3

    def _project_down(self) -> None:
        """(V_down, c_down) ← argmin Σ ω_m ‖[H, 1]_m [V_down, c_down]ᵀ − T_m‖² (with a ridge)."""
        w = self.w
        np.multiply(self.H, self.sqrt_omega, out=self.Hs[:, :w])
        gram = self.Hs.T @ self.Hs  # syrk
        np.matmul(self.Hs.T, self.Ts, out=self.HsT_T)
        gram[np.diag_indices_from(gram)] += self.ridge * float(np.trace(gram)) / len(gram) + 1e-30
        # numpy's LAPACK, not scipy's: scipy links a second OpenBLAS whose idle threads spin
        # against numpy's between calls (measured: 10× slower steps)
        sol = np.linalg.solve(gram, self.HsT_T)
        self.p["V_down"][...] = sol[:w].T
        if self.bias_col:
            self.p["c_down"][...] = sol[w]

    def loss_and_grad(self) -> float:
        """Forward and backward pass; fills ``self.grad`` and returns the loss."""
        p, g = self.p, self.grad
        np.matmul(self.X, p["V_up"].T, out=self.Z)
        if "c_up" in p:
            self.Z += p["c_up"]
        if self.Zg is None or self.Gv is None:
            self.unit(self.Z, self.H, self.D)
        else:
            np.matmul(self.X, p["V_gate"].T, out=self.Zg)
            self.unit(self.Zg, self.Gv, self.D)
            np.multiply(self.Gv, self.Z, out=self.H)
        if self.project:
            self._project_down()
        np.matmul(self.H, p["V_down"].T, out=self.Y)
        if "c_down" in p:
            self.Y += p["c_down"]
        self.Y -= self.T  # R, in place of Y
        np.multiply(self.Y, self.omega2, out=self.dY)  # dY = 2ω ⊙ R
        loss = 0.5 * float(np.vdot(self.dY, self.Y))  # Σ ω‖R‖², a BLAS dot
        if "V_down" in g:
            np.matmul(self.dY.T, self.H, out=g["V_down"])
        if "c_down" in g:
            np.sum(self.dY, axis=0, out=g["c_down"])
        np.matmul(self.dY, p["V_down"], out=self.dH)
        if self.Zg is None or self.Gv is None:
            self.dH *= self.D  # dZ
        else:
            # dZ_g = dH ⊙ Z ⊙ g'(Z_g) (into Z_g, no longer needed), then dZ = dH ⊙ g(Z_g)
            np.multiply(self.dH, self.Z, out=self.Zg)
            self.Zg *= self.D
            np.matmul(self.Zg.T, self.X, out=g["V_gate"])
            self.dH *= self.Gv
        np.matmul(self.dH.T, self.X, out=g["V_up"])
        if "c_up" in g:
            np.sum(self.dH, axis=0, out=g["c_up"])
        return loss

    def step(self, lr: float) -> float:
        """One Adam step at learning rate ``lr``; returns the loss before the step."""
        loss = self.loss_and_grad()
        self.update(lr)
        return loss

    def update(self, lr: float) -> None:
        """The Adam update from the gradient of the last `loss_and_grad`."""
        self.t += 1
        b1, b2 = self.beta1, self.beta2
        # bias corrections folded into the step size
        alpha = lr * math.sqrt(1 - b2**self.t) / (1 - b1**self.t)
        for k in self.trained:
            param, grad, m1, m2, tmp = self.p[k], self.grad[k], self.m1[k], self.m2[k], self.tmp[k]
            m1 *= b1
            m1 += (1 - b1) * grad
            np.multiply(grad, grad, out=tmp)
            m2 *= b2
            m2 += (1 - b2) * tmp
            np.sqrt(m2, out=tmp)
            tmp += self.eps
            np.divide(m1, tmp, out=tmp)
            tmp *= alpha
            param -= tmp
