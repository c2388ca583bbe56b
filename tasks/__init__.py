"""Task records, catalogs, generators, loaders and answer metrics (``raleval.tasks``)."""
