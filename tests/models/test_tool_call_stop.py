"""A turn ends after its last tool call: what a model writes past it (an invented tool result,
prose) is neither generated further nor returned."""

from __future__ import annotations

from transformers import AutoTokenizer

from harnessctl.models.local import _after_calls, _closed_tool_calls


def test_text_after_the_last_call_ends_the_turn_but_another_call_does_not():
    call = '<tool_call>{"name": "stock_check", "arguments": {"product_id": "P002"}}</tool_call>'
    assert _after_calls(call + "Great news, it is in stock!")
    assert _after_calls(call + '\n<|im_start|>tool\n{"in_stock": true}')
    assert not _after_calls(call)
    assert not _after_calls(call + "\n")
    assert not _after_calls(call + "\n<tool")  # the next call is being written
    assert not _after_calls(call + call)
    assert not _after_calls("Sure! One moment.")


def test_a_completion_is_cut_right_after_its_last_closed_call(tiny_model_path):
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_path)
    calls = (
        '<tool_call>{"name": "load_skill", "arguments": {"name": "stock_and_size"}}</tool_call>'
        '<tool_call>{"name": "stock_check", "arguments": {"product_id": "P002"}}</tool_call>'
    )
    ids = tokenizer(calls + " It is in stock!", add_special_tokens=False).input_ids
    cut = _closed_tool_calls(tokenizer, ids)
    assert cut is not None and tokenizer.decode(cut, skip_special_tokens=False) == calls
    assert _closed_tool_calls(tokenizer, tokenizer(calls, add_special_tokens=False).input_ids) is None
