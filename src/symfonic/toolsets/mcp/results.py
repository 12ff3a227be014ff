"""The text the model reads for an MCP tool's result.

A model reads a tool's result as text. MCP results are content blocks: the text blocks are joined;
images, audio and resources cannot be shown through a tool result today, so each is named in a line
the model can mention, rather than dropped silently or pasted as base64 it cannot read. Structured
content is the answer only when there is no text: servers that send both send the same data twice.
"""

from __future__ import annotations

from mcp_types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from symfonic.tools import render_result

__all__ = ["error_text", "render"]


def render(result: CallToolResult) -> str:
    """The result as text; the caller has already dealt with ``isError``."""
    parts = [_block(block) for block in result.content]
    text = "\n".join(part for part in parts if part)
    if result.structured_content is not None and not any(isinstance(b, TextContent) for b in result.content):
        structured = render_result(result.structured_content)
        return f"{structured}\n{text}" if text else structured
    return text


def error_text(result: CallToolResult) -> str:
    """What the server said went wrong, for an ``isError`` result."""
    return render(result) or "the tool reported an error and gave no reason"


def _block(block: ContentBlock) -> str:
    match block:
        case TextContent():
            return block.text
        case ImageContent():
            return f"[image: {block.mime_type}, {_size(block.data)}]"
        case AudioContent():
            return f"[audio: {block.mime_type}, {_size(block.data)}]"
        case ResourceLink():
            return f"[resource link: {block.uri}" + (f" ({block.name})]" if block.name else "]")
        case EmbeddedResource(resource=TextResourceContents() as contents):
            return f"[resource {contents.uri}]\n{contents.text}"
        case EmbeddedResource(resource=BlobResourceContents() as contents):
            kind = contents.mime_type or "binary data"
            return f"[resource {contents.uri}: {kind}, {_size(contents.blob)}]"
    return f"[{getattr(block, 'type', 'unknown')} content]"


def _size(base64_data: str) -> str:
    """The decoded size of base64 data, without decoding it."""
    padding = base64_data.count("=", -2)
    size = max(len(base64_data) * 3 // 4 - padding, 0)
    return f"{size} bytes"
