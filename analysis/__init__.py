"""Taxonomy, aggregation, plots and reports over stored trajectories (``raleval.analysis``)."""
