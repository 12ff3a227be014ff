"""The README's real-model example runs as a user would run it: a separate process, a key and a
base URL from the environment, a pause, an answer, one refund. The provider is the local stand-in,
which refuses any conversation the real API would refuse."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.standin import StandIn, Text, ToolCall, Turn

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("model", ["openai:gpt-5.1", "openai-chat:llama3.1",
                                   "anthropic:claude-sonnet-4-5"])
@pytest.mark.e2e
def test_the_example_pauses_for_approval_and_refunds_once(standin: StandIn, tmp_path: Path,
                                                           model: str) -> None:
    standin.enqueue(
        Turn(ToolCall("lookup_order", {"order_id": 42})),
        Turn(Text("Refunding it."), ToolCall("issue_refund", {"order_id": 42, "amount": 59.9})),
        Turn(Text("Order 42 was refunded.")),
    )
    refunds = tmp_path / "refunds.log"
    env = {**os.environ, "OPENAI_API_KEY": "test", "ANTHROPIC_API_KEY": "test",
           "OPENAI_BASE_URL": standin.openai_base_url, "ANTHROPIC_BASE_URL": standin.anthropic_base_url,
           "SYMFONIC_DEMO_REFUNDS": str(refunds), "SYMFONIC_SECRET": "a-test-secret-0123456789"}
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "real_model.py"), "--model", model,
         "--database", f"sqlite:///{tmp_path / 'db.sqlite'}", "--answer", "approve",
         "Please refund order 42."],
        env=env, capture_output=True, text=True, timeout=90, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "paused; resume later with: --resume " in done.stdout
    assert "completed: Order 42 was refunded." in done.stdout
    ran = [json.loads(line) for line in refunds.read_text().splitlines()]
    assert [(r["order_id"], r["amount"]) for r in ran] == [(42, 59.9)] and ran[0]["key"]
    assert len(standin.requests) == 3 and all(r.status == 200 for r in standin.requests)
