"""Task machinery (``raleval.tasks``): the catalog, dataset loaders, sampling, sets, template
expansion, demonstrations, gold-solution subgoals, and the robustness testbeds
(``testbeds/``). How answers are graded lives in ``raleval.grading``."""
