"""What the model reads for each kind of MCP content."""

from __future__ import annotations

from mcp_types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    ContentBlock,
    EmbeddedResource,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from symfonic.toolsets.mcp.results import error_text, render


def result(*blocks: ContentBlock, structured: object = None, is_error: bool = False) -> CallToolResult:
    return CallToolResult(content=list(blocks), structured_content=structured, is_error=is_error)


def test_text_blocks_are_joined_and_structured_content_stands_in_only_for_missing_text() -> None:
    assert render(result(TextContent(type="text", text="a"), TextContent(type="text", text="b"))) == "a\nb"
    assert render(result(TextContent(type="text", text="3"), structured={"result": 3})) == "3"
    assert render(result(structured=[1, 2])) == "[1, 2]"
    assert render(result()) == ""


def test_media_and_resources_are_named_not_pasted() -> None:
    link = ResourceLink(type="resource_link", uri="file:///r/report.pdf", name="report")
    text = EmbeddedResource(type="resource", resource=TextResourceContents(uri="mem://note", text="hello"))
    blob = EmbeddedResource(type="resource", resource=BlobResourceContents(uri="mem://bin", blob="AAAA",
                                                                           mime_type="application/zip"))
    audio = AudioContent(type="audio", data="AAAAAA==", mime_type="audio/wav")

    assert render(result(link, text, blob, audio)).splitlines() == [
        "[resource link: file:///r/report.pdf (report)]", "[resource mem://note]", "hello",
        "[resource mem://bin: application/zip, 3 bytes]", "[audio: audio/wav, 4 bytes]"]


def test_an_error_without_text_still_says_something() -> None:
    assert error_text(result(is_error=True)) == "the tool reported an error and gave no reason"
    assert error_text(result(TextContent(type="text", text="denied"), is_error=True)) == "denied"
