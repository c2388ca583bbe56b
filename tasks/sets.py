"""Benchmarks that span environments: R-Eval's twelve tasks and CRAG's KG questions."""

from raleval.registry import register_task_set

REVAL_12 = ["1-1", "1-2", "1-3", "2-1", "2-2", "2-3", "2-4", "3-1", "3-2", "3-3", "3-4", "3-5"]
register_task_set("reval-12")(REVAL_12)
