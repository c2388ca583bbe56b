"""CRAG's endpoints, one module per domain; each has ``tools(world, as_of)``."""
