"""``hf/<path>`` on a real (tiny, randomly initialised) transformers checkpoint, no hub access."""

from __future__ import annotations

import asyncio
import importlib.util

import pytest

from raleval.agents.agent import resolve_model
from raleval.model import GenerateRequest, Message

from .conftest import run_config

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="needs the torch extra"
)

WORDS = [
    "<unk>",
    "<s>",
    "</s>",
    "Question",
    ":",
    "Thought",
    "Action",
    "Finish",
    "[",
    "]",
    "searchPerson",
    "(",
    ")",
    "name",
    "=",
    "Ada",
    "17",
    "the",
    "answer",
    "is",
    "1",
    "2",
]


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory):
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    path = tmp_path_factory.mktemp("tiny-llama")
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>", pad_token="</s>"
    )
    fast.chat_template = "{% for m in messages %}{{ m['content'] }} {% endfor %}"
    fast.save_pretrained(path)
    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=len(WORDS),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=512,
        eos_token_id=2,
        bos_token_id=1,
    )
    LlamaForCausalLM(cfg).save_pretrained(path)
    return path


def test_greedy_generation_respects_budgets(tiny_checkpoint):
    model = resolve_model(f"hf/{tiny_checkpoint}", {"max_length": 64})
    req = GenerateRequest(messages=(Message("user", "Question : the answer is 17"),), max_tokens=5)
    a = asyncio.run(model.generate(req))
    b = asyncio.run(model.generate(req))
    assert a.text == b.text  # greedy decoding is deterministic
    assert a.prompt_tokens == model.count_tokens("Question : the answer is 17 ")
    assert 0 < a.completion_tokens <= 5


def test_long_prompts_are_cut_in_the_middle(tiny_checkpoint):
    model = resolve_model(f"hf/{tiny_checkpoint}", {"max_length": 40})
    long = "Question : " + "the answer is 1 " * 50 + "Ada"
    g = asyncio.run(
        model.generate(GenerateRequest(messages=(Message("user", long),), max_tokens=8))
    )
    assert g.prompt_tokens == 40 - 8


def test_hf_model_runs_a_react_episode(tiny_checkpoint, tmp_path):
    summary, results = run_config(
        tmp_path,
        model=f"hf/{tiny_checkpoint}",
        limit=1,
        workflow_options={"max_steps": 2, "max_tokens": 6},
    )
    assert summary.ran == 1
    r = results[0]
    assert r.n_llm_calls >= 1 and r.prompt_tokens > 0 and r.error_type is not None
