"""Reading a Messages API event stream into text chunks and one reply.

The raw events (``messages.create(stream=True)``) are read rather than the SDK's ``MessageStream``
helper, for two reasons: the helper parses tool input as it arrives and raises on input that is
not JSON, where symfonic keeps it and tells the model; and the reply's content blocks must be
stored exactly as the API sent them, which is simplest when this module builds them itself.

Each content block is rebuilt from its ``content_block_start`` (in the API's own field names) and
its deltas: text, tool input (by block index, through :class:`ReplyAssembly`), thinking text and
its signature. The finished blocks are the reply's ``ProviderItems``: what goes back on the next
request.
"""

from __future__ import annotations

import json
from typing import Any

from anthropic.types import RawMessageStreamEvent

from symfonic.kernel.messages import ModelReply, Usage
from symfonic.models.anthropic.request import PROVIDER
from symfonic.models.assembly import ReplyAssembly, parse_arguments
from symfonic.models.errors import ModelUnavailable

__all__ = ["StreamReader"]

Block = dict[str, Any]


class StreamReader:
    """One reply being read; :meth:`feed` every event, then take :meth:`reply`.

    Usage: Anthropic's ``input_tokens`` counts only the input that was neither read from nor
    written to the prompt cache. symfonic's ``Usage.input_tokens`` means *all* input (as OpenAI
    counts it), so it is the sum of the three, and ``cached_tokens`` (cache reads) is a part of it.
    ``message_start`` carries the input figures; ``message_delta`` carries cumulative totals that
    replace them (its optional fields only when present).
    """

    def __init__(self) -> None:
        self._assembly = ReplyAssembly()
        self._blocks: dict[int, Block] = {}
        self._input_json: dict[int, list[str]] = {}
        self._usage: dict[str, int] = {}
        self._started = False
        self._stopped = False

    def feed(self, event: RawMessageStreamEvent) -> str | None:
        """Take one event; returns the text it adds to the reply, to be shown at once."""
        if event.type == "message_start":
            self._started = True
            self._count(event.message.usage.to_dict(mode="json"))
        elif event.type == "content_block_start":
            return self._start(event.index, event.content_block.to_dict(mode="json"))
        elif event.type == "content_block_delta":
            return self._delta(event.index, event.delta.to_dict(mode="json"))
        elif event.type == "content_block_stop":
            self._stop(event.index)
        elif event.type == "message_delta":
            self._assembly.finish_reason = event.delta.stop_reason or self._assembly.finish_reason
            self._count(event.usage.to_dict(mode="json"))
        elif event.type == "message_stop":
            self._stopped = True
        return None

    def reply(self) -> ModelReply:
        """The whole reply, its blocks as the provider items to send back.

        Raises:
            ModelUnavailable: the stream ended before ``message_stop`` (a connection closed early
                without an error): the reply may be missing its end.
        """
        if not (self._started and self._stopped):
            raise ModelUnavailable("the Anthropic stream ended before the message was complete",
                                   provider=PROVIDER)
        self._assembly.provider_items = [self._blocks[index] for index in sorted(self._blocks)]
        usage = self._usage
        cache_read = usage.get("cache_read_input_tokens", 0)
        self._assembly.usage = Usage(
            input_tokens=usage.get("input_tokens", 0) + cache_read
            + usage.get("cache_creation_input_tokens", 0),
            output_tokens=usage.get("output_tokens", 0), cached_tokens=cache_read,
            reasoning_tokens=usage.get("thinking_tokens", 0))
        return self._assembly.reply(PROVIDER)

    def _count(self, figures: dict[str, Any]) -> None:
        for name in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens",
                     "output_tokens"):
            if isinstance(figures.get(name), int):
                self._usage[name] = figures[name]
        details = figures.get("output_tokens_details")
        if isinstance(details, dict) and isinstance(details.get("thinking_tokens"), int):
            self._usage["thinking_tokens"] = details["thinking_tokens"]

    def _start(self, index: int, block: Block) -> str | None:
        self._blocks[index] = block
        kind = block.get("type")
        if kind == "tool_use":
            self._assembly.start_call(index, call_id=str(block["id"]), name=str(block["name"]))
        if "input" in block:  # tool_use and the server tools' calls stream their input
            self._input_json[index] = []
        if kind == "text" and block.get("text"):
            self._assembly.add_text(block["text"])
            return str(block["text"])
        return None

    def _delta(self, index: int, delta: Block) -> str | None:
        kind = delta.get("type")
        if kind == "text_delta":
            text = self._blocks.setdefault(index, {"type": "text", "text": ""})
            text["text"] = text.get("text", "") + delta["text"]
            self._assembly.add_text(delta["text"])
            return str(delta["text"])
        block = self._blocks.get(index)
        if block is None:
            return None  # a delta for a block that never started: nothing to attach it to
        if kind == "input_json_delta":
            self._input_json.setdefault(index, []).append(delta["partial_json"])
            if block.get("type") == "tool_use":
                self._assembly.add_arguments(index, delta["partial_json"])
        elif kind == "thinking_delta":
            block["thinking"] = block.get("thinking", "") + delta["thinking"]
        elif kind == "signature_delta":
            block["signature"] = delta["signature"]  # sent whole, once, just before the block stops
        elif kind == "citations_delta":
            block.setdefault("citations", []).append(delta["citation"])
        return None

    def _stop(self, index: int) -> None:
        fragments = self._input_json.pop(index, None)
        block = self._blocks.get(index)
        if block is None or fragments is None:
            return
        if not fragments:
            # The input came whole in the start event (or the tool takes no arguments).
            if block.get("type") == "tool_use" and block.get("input"):
                self._assembly.set_arguments(index, json.dumps(block["input"]))
            return
        arguments, _raw = parse_arguments("".join(fragments))
        # Input that is not a JSON object stays on the call as written (raw_arguments) and the
        # model is told; the stored block needs an object all the same, as the API refuses
        # anything else in ``input`` when the block is sent back.
        block["input"] = arguments
