"""The human-in-the-loop workload both systems run, and how much of it a run measures.

One turn: a user message, the model asks the person a question (``ask_user`` for symfonic, a node
calling ``interrupt()`` for LangGraph), the turn pauses, the answer resumes it, the model reads
the answer and completes. The "model" is a deterministic function of the transcript on both
sides, so nothing but the runtime and its storage is measured.

History is the number of messages already in the session before the measured turn: alternating
user / assistant messages of ``MESSAGE_CHARS`` characters. Their words are drawn at random (seeded
by position, so every run and both systems store the same text) from a vocabulary of a few hundred
words: text that compresses about as well as real conversation does. A repeated sentence, as
earlier versions used, let PostgreSQL's TOAST compress each row ~10x and flattered whichever
system stores more bytes.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

MESSAGE_CHARS = 200
QUESTION = "Which plan should I book for you?"
ANSWER = "the blue plan"
FINAL_PREFIX = "Noted: "
USER_INPUT = "Please book me a plan."
SECRET = "bench-secret-0123456789abcdef0123456789"
HISTORIES = (0, 100, 1000, 5000)
CONCURRENCY = (1, 8, 32)
_SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "an", "el", "or", "us", "pri", "dem",
              "gal", "tur")
VOCABULARY = tuple(sorted({a + b + c for a in _SYLLABLES for b in _SYLLABLES for c in ("", "n", "s",
                                                                                      "ter", "ing")}))
"""About 1,200 made-up words of 2 to 9 letters, in a fixed order."""


def history_text(index: int) -> str:
    """The ``index``-th prior message: ``MESSAGE_CHARS`` characters of varied words, the same
    on every run."""
    draw = random.Random(index)
    words = [f"message {index:06d}:"]
    while sum(len(word) + 1 for word in words) < MESSAGE_CHARS:
        words.append(draw.choice(VOCABULARY))
    return " ".join(words)[:MESSAGE_CHARS]


def history_roles(count: int) -> list[tuple[str, str]]:
    """``count`` prior messages as (role, text), alternating user and assistant."""
    return [("user" if i % 2 == 0 else "assistant", history_text(i)) for i in range(count)]


@dataclass(frozen=True, kw_only=True)
class Plan:
    """How many samples each part of a run takes.

    Attributes:
        samples: Pause + resume samples per (backend, history) cell, per system.
        cycle_seconds: How long each concurrency level runs, per system and backend.
        race_trials: Trials per race scenario, per system and backend.
        floor_samples: Minimal durable commits timed per backend.
        profile_cycles: Cycles per profiled cell; 0 skips profiling.
        sync_langgraph: Also measure LangGraph's sync savers (latency cells only).
        adapter_rounds: Streamed rounds timed per model adapter, and as many SDK calls alone.
        warm_pairs: symfonic pauses timed at history 0 and 5,000, alternating (each of both).
    """

    samples: dict[int, int]
    floor_samples: int
    cycle_seconds: float
    race_trials: int
    profile_cycles: int
    sync_langgraph: bool
    adapter_rounds: int = 200
    warm_pairs: int = 40

    @classmethod
    def full(cls) -> Plan:
        return cls(samples={0: 150, 100: 80, 1000: 30, 5000: 20}, floor_samples=300,
                   cycle_seconds=4.0, race_trials=20, profile_cycles=15,
                   sync_langgraph=True, adapter_rounds=300, warm_pairs=60)

    @classmethod
    def quick(cls) -> Plan:
        return cls(samples={0: 10, 100: 5, 1000: 3, 5000: 2}, floor_samples=50,
                   cycle_seconds=0.5, race_trials=2, profile_cycles=0, sync_langgraph=False,
                   adapter_rounds=20, warm_pairs=4)
