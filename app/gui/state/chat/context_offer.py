"""Whether a chat that outgrew its context can have a larger one: twice its context (at most
what the model was trained for), where the daemon's plan of the chat's model at that context,
with the chat's other options, fits in the memory free now.

The plan is the one the chat's settings show (``/api/plan``: every cache, buffer and placement
the load would take), asked the same way (``services.setting_plan``: in a worker, the answer to
an older ask dropped). Until it comes, or where the daemon could not plan, nothing is offered:
a larger context that then does not load is worse than none. Qt-free.
"""

from __future__ import annotations

from dataclasses import replace

from localllm.app.gui.state.chat.records import ChatOptions
from localllm.app.gui.state.setting_plan import PlanAsk, PlanPreview, memory_options

__all__ = ["larger_context", "offer_ask", "offered"]


def larger_context(current: int, trained: int | None) -> int | None:
    """Twice ``current``, at most what the model was trained for; None when there is nothing
    larger (or the trained length is not known)."""
    if not trained or current >= trained:
        return None
    return min(trained, current * 2)


def offer_ask(model: str, options: ChatOptions, larger: int) -> PlanAsk:
    """The plan to ask before offering ``larger``: the chat's model with the chat's options
    that decide memory, at ``larger`` tokens."""
    return PlanAsk.of(model, memory_options(replace(options, num_ctx=larger), None))


def offered(preview: PlanPreview, ask: PlanAsk) -> int | None:
    """The context ``ask`` plans, where ``preview`` holds its plan and the plan fits; None
    while it is planning, after a failure, for another ask, or where it does not fit."""
    plan = preview.plan
    if preview.ask != ask or plan is None or not plan.fits:
        return None
    return ask.options_dict()["num_ctx"]
