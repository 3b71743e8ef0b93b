"""Chat templates for the tool-call tests, over the tiny tokenizer's turn tokens: one in
Qwen2.5's style (written here in our own words: given `tools` it lists them in the system
turn and writes calls as `<tool_call>` blocks) and one that never reads `tools` (SmolLM2's
kind), and the tiny tokenizer with `<tool_call>` / `</tool_call>` added as Qwen2.5 has them."""

from __future__ import annotations

import tokenizers
from tokenizers import AddedToken

from kimmy_swarm.model.presets import tiny_tokenizer
from kimmy_swarm.model.tokenizer import HFTokenizer

__all__ = ["PLAIN_TEMPLATE", "TOOLS_TEMPLATE", "with_template"]

TOOLS_TEMPLATE = (
    "{%- if tools %}<|im_system|>system<|im_middle|>"
    "{{ messages[0]['content'] if messages[0]['role'] == 'system' else 'You help.' }}"
    "\n\nTools, one signature per line:\n<tools>"
    "{%- for tool in tools %}{{ '\\n' + tool | tojson }}{%- endfor %}{{ '\\n' }}"
    '</tools>\nCall one as <tool_call>\n{"name": …, "arguments": {…}}\n</tool_call><|im_end|>'
    "{%- elif messages[0]['role'] == 'system' %}"
    "<|im_system|>system<|im_middle|>{{ messages[0]['content'] }}<|im_end|>"
    "{%- endif %}"
    "{%- for m in messages %}"
    "{%- if m['role'] == 'system' and loop.first %}"
    "{%- elif m['role'] == 'assistant' %}<|im_assistant|>assistant<|im_middle|>"
    "{{ m['content'] or '' }}"
    "{%- for call in m.get('tool_calls') or [] %}"
    "{{ '\\n' if m['content'] or not loop.first else '' }}<tool_call>{{ '\\n' }}"
    '{"name": "{{ call.function.name }}", "arguments": {{ call.function.arguments | tojson }}}'
    "{{ '\\n' }}</tool_call>"
    "{%- endfor %}<|im_end|>"
    "{%- elif m['role'] == 'tool' %}<|im_user|>tool<|im_middle|><tool_response>"
    "{{ '\\n' + m['content'] + '\\n' }}</tool_response><|im_end|>"
    "{%- else %}<|im_user|>{{ m['role'] }}<|im_middle|>{{ m['content'] }}<|im_end|>"
    "{%- endif %}{%- endfor %}"
    "{%- if add_generation_prompt %}<|im_assistant|>assistant<|im_middle|>{%- endif %}"
)
# SmolLM2's kind: a template that never reads `tools`.
PLAIN_TEMPLATE = (
    "{% for m in messages %}<|im_user|>{{ m['role'] }}<|im_middle|>{{ m['content'] }}<|im_end|>"
    "{% endfor %}{% if add_generation_prompt %}<|im_assistant|>assistant<|im_middle|>{% endif %}"
)


def with_template(template: str | None) -> HFTokenizer:
    """The tiny tokenizer with `<tool_call>`/`</tool_call>` as (non-special) added tokens,
    as Qwen2.5 has them, and `template` as its chat template."""
    base = tiny_tokenizer(vocab_size=384, num_docs=40)
    raw = tokenizers.Tokenizer.from_str(base._tok.to_str())  # a copy: the base is cached
    raw.add_tokens([AddedToken(t, special=False, normalized=False)
                    for t in ("<tool_call>", "</tool_call>")])  # fmt: skip
    config = {k: v for k, v in base.config.items() if k != "chat_template"}
    return HFTokenizer(raw, config if template is None else {**config, "chat_template": template})
