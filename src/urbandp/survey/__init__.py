"""Travel-survey privacy toolkit (report: "Differential privacy in travel data", MPI 2021).

Modules: :mod:`randomized_response` (binary / k-ary RR, the report's sub-category replacement, de-biasing),
:mod:`categorical` (declared lists, aliases, quarantine), :mod:`locations` (per-axis and planar Laplace),
:mod:`escape` (simulation of block escape, not a release), :mod:`trips` (OD randomized response, section 6.3),
:mod:`ssd` (trajectory perturbation), :mod:`sampling` (exact column-wide random sources), :mod:`synth`.
"""
