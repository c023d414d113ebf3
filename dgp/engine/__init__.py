"""The classification engine: canonical log-weights, the target family, the verdict rules and
typed certificates, deciding with the one tolerance policy of :mod:`dgp.tolerance`.

Modules: :mod:`~dgp.engine.target` (log-weights, cycle condition),
:mod:`~dgp.engine.family` (the decisions along a family), :mod:`~dgp.engine.rules` (the only
place a :class:`~dgp.result.Classification` is built), :mod:`~dgp.engine.certificates`, the
spectra of :mod:`~dgp.engine.dense`, :mod:`~dgp.engine.blocks`, :mod:`~dgp.engine.lowrank` and
:mod:`~dgp.engine.sdp`, zero weights in :mod:`~dgp.engine.zeros`, c-grids in
:mod:`~dgp.engine.scan`, and the dense data path in :mod:`~dgp.engine.pipeline`.
"""
