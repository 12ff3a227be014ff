"""OpenTelemetry traces and metrics of turns, across their pauses (``pip install 'symfonic-runtime[otel]'``).

symfonic uses only ``opentelemetry-api``, through the global providers, and imports it at the
first turn, never with ``import symfonic``; without it installed, nothing is traced and nothing
is imported (:mod:`.otel`). Spans (:mod:`.spans`) follow the GenAI semantic conventions: an
``invoke_agent`` span per turn segment, ``chat`` per model call, ``execute_tool`` per tool call; a
pause is an event of its segment's span, and the segment that resumes it links to that span, on
any host. Metrics (:mod:`.measures`): tokens and durations of model calls (the GenAI metrics),
tool durations, and of pauses: time to answer, resumes by outcome, refusals by type.
"""

from __future__ import annotations

from symfonic.observability.otel import CONTENT_VARIABLE, active
from symfonic.observability.spans import current_trace_parent, instrumented, traced_segment

__all__ = ["CONTENT_VARIABLE", "active", "current_trace_parent", "instrumented", "traced_segment"]
