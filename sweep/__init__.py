"""``speedbench sweep PLAN``: the whole SPEED-Bench protocol for one deployment, from one plan file.

Modules: ``schema`` (the plan's tables, checked by pydantic) and ``locate`` (their line numbers),
``plan`` (read, check and expand a plan), ``run_options`` (run tables through ``speedbench run``'s
own parser), ``units`` (one run folder per variant x workload x repeat), ``server`` and ``launch``
(a variant's server: started in its own process group, health, provenance, stopped and gone),
``state`` (resume bookkeeping), ``records`` (failed requests set aside after a server died),
``progress`` (the bar), ``runner`` (the loop), ``choice`` (best draft length over repeats),
``report`` (the whole sweep's report, built on ``speedbench report``), ``bundles`` (leaderboard).
"""
from speedbench.sweep.plan import Plan, PlanError, load_plan

__all__ = ["Plan", "PlanError", "load_plan"]
