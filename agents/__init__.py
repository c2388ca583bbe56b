"""LLM providers and the agent pairing (installed as ``raleval.agents``)."""
