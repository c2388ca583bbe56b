"""The CRAG environment's task families (CRAG's question types over the KG), registered on
import: ``crag-kg-simple`` (simple) and ``crag-kg`` (all eight)."""

from raleval.envs.crag.families import simple, types

__all__ = ["simple", "types"]
