"""The tiny model's chat template: ChatML turns, a compact tool list, Hermes-style tool calls.

Designed for what a model of a few million parameters can learn (measured: a compact listing
with the description before the name learns to pick renamed tools; the verbose JSON listing does
not):

- Tools are listed one line each, description first, then the name and its parameters
  (``?`` marks an optional one)::

      - show the product card of one item with prices and attributes : get_product_details(product_id)

- A tool call is ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``, exactly what
  :func:`harnessctl.models.toolcall_text.format_tool_call` writes and ``parse_tool_calls`` and
  vLLM's ``hermes`` parser read.
- Tool results are their own ``tool`` turn; ``reasoning_content`` is shown as ``<think>...</think>``.
- The assistant's output (content, calls, the closing ``<|im_end|>``) sits inside
  ``{% generation %}`` so ``return_assistant_tokens_mask`` (TRL's assistant-only loss) masks
  exactly what the model writes, stop token included.
- Nothing depends on a message's position, so the template is prefix-preserving (appending a
  tool result never re-renders an earlier turn), which TRL's tool-calling GRPO loop needs.
"""

from __future__ import annotations

IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
END_OF_TEXT = "<|endoftext|>"
TOOL_CALL_OPEN = "<tool_call>"
TOOL_CALL_CLOSE = "</tool_call>"
THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"

#: Tokens that end or delimit turns (special: dropped by ``skip_special_tokens``).
SPECIAL_TOKENS = (END_OF_TEXT, IM_START, IM_END)
#: Structural markers kept in decoded text (a tool-call parser must see them).
MARKER_TOKENS = (TOOL_CALL_OPEN, TOOL_CALL_CLOSE, THINK_OPEN, THINK_CLOSE)

#: Header line above the compact tool list.
TOOLS_HEADER = "Tools:"

CHAT_TEMPLATE = (
    "{#- harnessctl tiny chat template: compact tool list, description before name. -#}\n"
    "{%- macro tool_line(tool) -%}\n"
    "{%- set fn = tool.function if tool.function is defined else tool -%}\n"
    "{%- set params = fn.parameters if fn.parameters is defined and fn.parameters else {} -%}\n"
    "{%- set props = params.properties if params.properties is defined and params.properties else {} -%}\n"
    "{%- set required = params.required if params.required is defined and params.required else [] -%}\n"
    "{{- '- ' + (fn.description if fn.description is defined and fn.description else '') + ' : ' + fn.name + '(' -}}\n"
    "{%- for p in props -%}\n"
    "{{- p + ('' if p in required else '?') + (', ' if not loop.last else '') -}}\n"
    "{%- endfor -%}\n"
    "{{- ')' -}}\n"
    "{%- endmacro -%}\n"
    "{%- set offset = 0 -%}\n"
    "{%- if messages and messages[0].role == 'system' -%}\n"
    "{%- set offset = 1 -%}\n"
    "{%- endif -%}\n"
    "{%- if offset == 1 or tools -%}\n"
    "{{- '<|im_start|>system\\n' -}}\n"
    "{%- if offset == 1 -%}{{- messages[0].content -}}{%- endif -%}\n"
    "{%- if tools -%}\n"
    "{%- if offset == 1 and messages[0].content -%}{{- '\\n\\n' -}}{%- endif -%}\n"
    "{{- 'Tools:' -}}\n"
    "{%- for tool in tools -%}{{- '\\n' + tool_line(tool) -}}{%- endfor -%}\n"
    "{%- endif -%}\n"
    "{{- '<|im_end|>\\n' -}}\n"
    "{%- endif -%}\n"
    "{%- for message in messages[offset:] -%}\n"
    "{%- set content = message.content if message.content is string else '' -%}\n"
    "{%- if message.role == 'assistant' -%}\n"
    "{{- '<|im_start|>assistant\\n' -}}\n"
    "{%- generation -%}\n"
    "{%- if message.reasoning_content is defined and message.reasoning_content is string and message.reasoning_content -%}\n"
    "{{- '<think>' + message.reasoning_content + '</think>' -}}\n"
    "{%- endif -%}\n"
    "{{- content -}}\n"
    "{%- if message.tool_calls is defined and message.tool_calls -%}\n"
    "{%- for call in message.tool_calls -%}\n"
    "{%- set fn = call.function if call.function is defined else call -%}\n"
    '{{- \'<tool_call>{"name": "\' + fn.name + \'", "arguments": \' -}}\n'
    "{%- if fn.arguments is string -%}{{- fn.arguments -}}{%- else -%}{{- fn.arguments | tojson -}}{%- endif -%}\n"
    "{{- '}</tool_call>' -}}\n"
    "{%- endfor -%}\n"
    "{%- endif -%}\n"
    "{{- '<|im_end|>' -}}\n"
    "{%- endgeneration -%}\n"
    "{{- '\\n' -}}\n"
    "{%- else -%}\n"
    "{{- '<|im_start|>' + message.role + '\\n' + content + '<|im_end|>\\n' -}}\n"
    "{%- endif -%}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}\n"
    "{{- '<|im_start|>assistant\\n' -}}\n"
    "{%- endif -%}\n"
)


def tool_line(spec: dict) -> str:
    """The line the template writes for one OpenAI tool spec (for corpora and tests).

    >>> tool_line({"type": "function", "function": {"name": "check_stock", "description": "stock of a variant",
    ...            "parameters": {"properties": {"product_id": {}, "size": {}}, "required": ["product_id"]}}})
    '- stock of a variant : check_stock(product_id, size?)'
    """
    fn = spec.get("function", spec)
    params = fn.get("parameters") or {}
    props = params.get("properties") or {}
    required = params.get("required") or []
    args = ", ".join(p + ("" if p in required else "?") for p in props)
    return f"- {fn.get('description') or ''} : {fn['name']}({args})"


#: How ``tokenizer.parse_response`` (transformers) reads one assistant turn written with this
#: template; TRL's tool-calling trainers use it. Same shape as TRL's Qwen3 response template.
RESPONSE_TEMPLATE = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "reasoning_content": {"open": "<think>", "close_pattern": r"</think>\s*", "content": "text"},
        "tool_calls": {
            "open": "<tool_call>",
            "close_pattern": r"</tool_call>\s*",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {"close_pattern": r"<\|im_end\|>\s*", "content": "text"},
    },
}
