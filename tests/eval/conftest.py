"""Fixtures of the eval room: stub models served on loopback, so runs go through litellm exactly
as they would against vLLM, with no network."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from harnessctl.models.scripted import ScriptedModel
from harnessctl.models.server import serve_in_background

STUB_REPLY = "Thanks for asking! Let me check that for you."


def slow_model(delay_s: float, reply: str = STUB_REPLY) -> ScriptedModel:
    """A model that takes ``delay_s`` per call and always gives the same plain reply."""

    def answer(messages, tools):
        time.sleep(delay_s)
        return reply

    return ScriptedModel([answer], name="stub", repeat_last=True)


@pytest.fixture
def slow_stub() -> Iterator[str]:
    """An OpenAI-compatible endpoint whose every answer takes 100 ms; yields its base URL."""
    url, stop = serve_in_background(slow_model(0.1), model_name="stub")
    try:
        yield url
    finally:
        stop()


@pytest.fixture(scope="session")
def instant_stub() -> Iterator[str]:
    url, stop = serve_in_background(slow_model(0.0), model_name="stub")
    try:
        yield url
    finally:
        stop()
