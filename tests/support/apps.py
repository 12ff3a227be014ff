"""Apps for the CLI's tests, written into each test's directory as ``apps.py``.

Each agent's model names the agent it belongs to in its reply, so the output says which app the
command loaded.
"""

APPS = '''
from datetime import timedelta

from symfonic import AgentSpec, Host, HumanInteraction, ModelReply, ToolCall, tool
from symfonic.models import FunctionModel


@tool
def ping(n: int) -> str:
    """Ping; needs approval."""
    return f"pong {n}"


def saying(name):
    def policy(messages, tools):
        last = messages[-1]
        if last.role == "user" and "ping" in last.content:
            return ModelReply(tool_calls=[ToolCall(id="ping-1", name="ping", arguments={"n": 1})])
        if last.role == "user" and "crash" in last.content:
            raise RuntimeError("the model fell over")
        return ModelReply(text=f"{name} says {last.content}")
    return FunctionModel(policy)


def spec(name, ttl=timedelta(hours=1)):
    return AgentSpec(name=name, model=saying(name), tools=[ping],
                     capabilities=[HumanInteraction(approvals=["ping"], ttl=ttl)])


instance = Host.open(agents=[spec("instance")])


def factory():
    return Host.open(agents=[spec("made")])


async def async_factory():
    return Host.open(agents=[spec("awaited")])


def own_store():
    return Host.open("sqlite:///own.db", agents=[spec("own")])


def short_lived():
    return Host.open(agents=[spec("brief", ttl=timedelta(milliseconds=1))])


def two_agents():
    return Host.open(agents=[spec("first"), spec("second")])


def needs_arguments(tenant):
    return Host.open(agents=[spec(tenant)])


def not_a_host():
    return 42


number = 42
'''
