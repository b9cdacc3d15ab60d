"""A tiny deterministic chat model for unit tests of the agent loop (not the real LLM)."""
from __future__ import annotations

import json
from typing import Any, Callable

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import ConfigDict

from thread_rag.agent.answer import DECIDE_PROMPT, SOURCES_PROMPT
from thread_rag.agent.intent import INTENT_PROMPT
from thread_rag.agent.loop import CONDENSE
from thread_rag.agent.steps import LOOKUP_SYSTEM, SPLIT_SYSTEM


class ScriptedChatModel(BaseChatModel):
    """Replies by the kind of request: condensation returns ``standalone``; the intent check returns ``action``; the sources follow-up returns
    ``sources``; the post-reading decision returns ``decide``; question steps: the split returns ``lookups`` (a string as
is), each lookup's answer pops ``lookup_answers``; the answer calls ``answer(messages)``. Every call is recorded in
``calls``."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    standalone: str | None = None
    answer: Any = None
    calls: list = []
    action: str = "question"
    sources: Any = None
    decide: Any = None
    lookups: Any = None
    lookup_answers: list = []
    finish_reason: str | None = None  # what a streamed reply's last chunk reports, as llama.cpp's does ("length")
    finish_key: str = "finish_reason"  # llama.cpp's key; Ollama's is done_reason

    @property
    def _llm_type(self) -> str:
        return "scripted-fake"

    def reply(self, messages, kwargs) -> str:
        last = messages[-1].content
        self.calls.append({"last": last[:200], "tail": last[-300:], "format": kwargs.get("format"), "system": messages[0].content,
                           "stop": kwargs.get("stop"), "max_tokens": kwargs.get("max_tokens")})
        if messages[0].content == SPLIT_SYSTEM:
            return self.lookups if isinstance(self.lookups, str) else json.dumps({"steps": self.lookups or [last]})
        if messages[0].content == LOOKUP_SYSTEM:
            return self.lookup_answers.pop(0) if self.lookup_answers else ""
        if last.endswith(DECIDE_PROMPT):
            d = self.decide if self.decide is not None else {"decision": "answer"}
            return d if isinstance(d, str) else json.dumps(d)
        if last == SOURCES_PROMPT:
            return json.dumps({"sources": self.sources if self.sources is not None else [1]})
        if last.startswith(INTENT_PROMPT.split("\n")[0]):
            return json.dumps({"action": self.action})
        if CONDENSE in last:
            return json.dumps({"question": self.standalone or "?"})
        fn: Callable = self.answer or (lambda msgs: "An answer.")
        return fn(messages)

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        text = self.reply(messages, {**kwargs, "stop": stop})
        return ChatResult(generations=[ChatGeneration(message=AIMessage(
            content=text, usage_metadata={"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}))])

    def _stream(self, messages, stop=None, run_manager=None, **kwargs):
        for word in self.reply(messages, kwargs).split(" "):
            yield ChatGenerationChunk(message=AIMessageChunk(content=word + " "))
        if self.finish_reason:
            yield ChatGenerationChunk(message=AIMessageChunk(content="", response_metadata={
                self.finish_key: self.finish_reason}))


def agent_with(engine, events: list | None = None, **kw):
    """An Agent over ``engine`` whose model is a ``ScriptedChatModel(**kw)`` (its ``calls`` recorded from empty);
    ``events``: a list the agent's events are appended to as (kind, data)."""
    from thread_rag.agent.loop import Agent

    model = ScriptedChatModel(**kw)
    model.calls = []
    model.metadata = {"backend": "fake", "model": "scripted", "ctx": 0}
    on_event = (lambda kind, data: events.append((kind, data))) if events is not None else None
    return Agent(engine, chat_model=model, on_event=on_event), model
