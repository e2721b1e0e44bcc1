"""One generation of a thinking model: its output split, and its answer part when it has one.

A two-part plan (a thinking budget, or a grammar that must apply to the answer only) first
generates the thinking alone: no grammar, the closing marker as the only stop string, at most
``budget`` tokens. Then, however the thinking ended (its closing marker, the budget, an
end-of-turn token), the answer part is a second generation whose prompt is the first prompt,
the thinking so far and the closing marker (and, for harmony, the final channel's header): the
model has to answer. The runner reuses the longest cached prefix, so only that tail is decoded
again. Its numbers are added to the thinking part's, so usage covers both.
"""

from __future__ import annotations

import dataclasses

from localllm.daemon.inference.thinking import (
    Think,
    ThinkingFormat,
    ThinkingPlan,
    parse_think_budget,
    plan_thinking,
)
from localllm.daemon.inference.thinking_split import Split, splitter_for
from localllm.daemon.runners.types import DoneEvent, GenerateCall

__all__ = ["ThinkingRun", "add_parts", "thinking_run"]


def thinking_run(
    model: str, fmt: ThinkingFormat | None, think: Think, budget: object, call: GenerateCall
) -> ThinkingRun | None:
    """How ``call`` thinks (None for a model that does not); raises for a ``think`` the model
    cannot do."""
    params = call.params
    plan = plan_thinking(
        model,
        fmt,
        think,
        call.prompt,
        budget=parse_think_budget(budget),
        grammar=bool(params.grammar or params.json_schema),
    )
    return ThinkingRun(plan, call) if plan is not None else None


class ThinkingRun:
    """Feed it the runner's text; ask ``next_call`` at each part's end."""

    def __init__(self, plan: ThinkingPlan, call: GenerateCall):
        self.plan = plan
        fmt = plan.format
        self._call = dataclasses.replace(
            call, prompt=call.prompt + plan.opening, visible_tokens=fmt.tokens
        )
        self._splitter = splitter_for(fmt, plan.opened)
        self._thinking_part = plan.two_parts  # generating the thinking alone
        self._raw: list[str] = []  # the thinking part's text, for the answer part's prompt
        self.first_part: DoneEvent | None = None

    def first_call(self) -> GenerateCall:
        if not self._thinking_part:
            return self._call
        params = self._call.params
        limit = params.max_tokens
        budget = self.plan.budget
        cap = budget if budget is not None and (limit is None or budget < limit) else limit
        thinking = dataclasses.replace(
            params, grammar=None, json_schema=None, stop=(self.plan.format.closing,), max_tokens=cap
        )
        return dataclasses.replace(self._call, params=thinking)

    def feed(self, text: str) -> Split:
        if self._thinking_part:
            self._raw.append(text)
        return self._shown(self._splitter.feed(text))

    def finish(self) -> Split:
        return self._shown(self._splitter.finish())

    def next_call(self, done: DoneEvent) -> tuple[GenerateCall, Split] | None:
        """After the thinking part: the answer part's call, and the thinking still held back;
        None when the generation is over."""
        if not self._thinking_part:
            return None
        self._thinking_part = False
        left = self._tokens_left(done)
        if done.reason not in ("stop", "length") or (left is not None and left <= 0):
            return None
        if done.reason == "length" and not self._budget_ran_out(done):
            return None  # the context is full
        self.first_part = done
        raw = "".join(self._raw)
        closing = self.plan.format.close_prompt
        if raw.endswith("\n") and closing.startswith("\n"):
            closing = closing[1:]
        params = dataclasses.replace(self._call.params, max_tokens=left)
        call = dataclasses.replace(self._call, prompt=self._call.prompt + raw + closing)
        return dataclasses.replace(call, params=params), self._shown(self._splitter.end_thinking())

    def _tokens_left(self, done: DoneEvent) -> int | None:
        limit = self._call.params.max_tokens
        return None if limit is None else limit - done.completion_tokens

    def _budget_ran_out(self, done: DoneEvent) -> bool:
        budget, limit = self.plan.budget, self._call.params.max_tokens
        if budget is None or (limit is not None and budget >= limit):
            return False  # no budget, or the request's own limit comes first
        return done.completion_tokens >= budget

    def _shown(self, split: Split) -> Split:
        thinking, answer = split
        return (thinking if self.plan.show else ""), answer


def add_parts(first: DoneEvent, second: DoneEvent) -> DoneEvent:
    """One generation's numbers from its two parts. Built from the answer part, so a field
    this function does not name is the answer's (how it ended, its stop string, where it was
    sampled), never dropped. The prompt is the first part's (the answer part's prompt is
    mostly the first's, cached); tokens, times and speculative guesses are both parts'."""
    return dataclasses.replace(
        second,
        prompt_tokens=first.prompt_tokens,
        prompt_evaluated=first.prompt_evaluated,
        prompt_disk_tokens=first.prompt_disk_tokens,
        prompt_disk_bytes=first.prompt_disk_bytes + second.prompt_disk_bytes,
        prompt_disk_seconds=first.prompt_disk_seconds + second.prompt_disk_seconds,
        completion_tokens=first.completion_tokens + second.completion_tokens,
        prompt_seconds=first.prompt_seconds,
        generation_seconds=first.generation_seconds
        + second.prompt_seconds
        + second.generation_seconds,
        first_token_seconds=first.first_token_seconds or second.first_token_seconds,
        draft_tokens=first.draft_tokens + second.draft_tokens,
        draft_accepted=first.draft_accepted + second.draft_accepted,
    )
