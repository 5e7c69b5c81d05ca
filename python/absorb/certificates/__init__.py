"""Certificates about index sets, by concern (THEORY.md: relaxation_certificate, dual certificate).

* :mod:`.real_relaxation` — the real relaxation r² in Gram form, and its predicted cost;
* :mod:`.dual` — producing dual certificates Y (relaxation residual, separation LP);
* :mod:`.recheck` — the independent, rigorous re-check of a certificate on the stored numbers;
* :mod:`.index_set_search` — the complete index-set search, planned by its predicted cost;
* :mod:`.enumeration` — its engines: the exact meet-in-the-middle (fingerprints modulo primes,
  every match confirmed exactly), the float one over the reduced system, HiGHS ``milp``;
* :mod:`.rounding` — storage precision: "absorbable up to rounding";
* :mod:`.prepared` — validated weights for the producers (float64 arrays or exact ``Fraction``
  arrays); the re-check parses on its own;
* :mod:`.devices` — the torch device path of the dense phases.
"""

from absorb.certificates.dual import DualCertificate, RationalMatrix, dual_certificate
from absorb.certificates.index_set_search import (
    IndexSetSearch,
    SearchPlan,
    brute_force_index_set,
    find_index_set,
    index_set_residual,
    plan_exact_search,
    plan_search,
)
from absorb.certificates.real_relaxation import Relaxation, gram, relaxation, relaxation_cost
from absorb.certificates.recheck import DualCheck, check_dual, check_index_set

__all__ = [
    "DualCertificate",
    "DualCheck",
    "IndexSetSearch",
    "RationalMatrix",
    "Relaxation",
    "SearchPlan",
    "brute_force_index_set",
    "check_dual",
    "check_index_set",
    "dual_certificate",
    "find_index_set",
    "gram",
    "index_set_residual",
    "plan_exact_search",
    "plan_search",
    "relaxation",
    "relaxation_cost",
]
