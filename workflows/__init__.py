"""Workflows (installed as ``raleval.workflows``): one LangGraph builder per workflow.

A workflow is a function ``(model, env, config) -> compiled graph``; it never knows which
environment or model it serves.
"""
