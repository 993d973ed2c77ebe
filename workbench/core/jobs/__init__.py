"""Whole jobs as one call each, for the CLI and the GUI alike, one module a job: ``train``
(new or resumed), ``evaluate`` (a run or a coordinator file), ``export``, ``study``
(optimizers compared over seeds; its result table in ``study_stats``), ``learned`` and
``episode`` (one episode played and stored). What they share (the runs registry, the run
lock, the backbone and the pool) is ``shared``.

Each builds what it needs from a ``RunConfig`` and a workspace (suite, pool, backbone,
response cache, store) and hands events to listeners. Import the job from its module
(``from workbench.core.jobs.train import train``): this package re-exports nothing.
"""
