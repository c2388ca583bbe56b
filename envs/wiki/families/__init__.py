"""The wiki environment's task families over the generated encyclopedia: KS (1-1, 1-2), KU
(2-1..2-3) and KA (3-1..3-4), registered on import; ``wiki`` is all of them. The long-form
families (module ``longform``, set ``wiki-longform``) register on import too, outside ``wiki``."""

from raleval.envs.wiki.families import ka, ks, ku, longform
from raleval.registry import register_task_set

WIKI_FAMILIES = ["1-1", "1-2", "2-1", "2-2", "2-3", "3-1", "3-2", "3-3", "3-4"]
register_task_set("wiki")(WIKI_FAMILIES)

__all__ = ["WIKI_FAMILIES", "ka", "ks", "ku", "longform"]
