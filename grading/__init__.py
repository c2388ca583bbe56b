"""How an answer is graded: rules by answer type (``rules``), the paper's metrics
(``metrics``), CRUD-RAG's long-form metrics (``longform``), RAGQuestEval (``questeval``), LLM
judges (``judge``) and their validation against answers of known truth (``judge_validation``,
``agreement``). Grading reads answers and golds only: it imports core and nothing above it."""
