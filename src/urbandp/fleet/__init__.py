"""Fleet GPS wing: records -> HATs -> vehicle-level bounding -> DP speeds per HAT (ITMS technical report).

Modules: ``config`` (the release's public parameters), ``selection`` (which HATs are released), ``accounting``
(epsilon per HAT, per day, per window), ``release`` (noise and released tables), ``pipeline`` (read, validate,
contributions, release, write), ``explore`` (data-owner exploration, not DP) and ``cli``.
"""
