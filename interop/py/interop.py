# Drives Bondry with the official Python SDK client: the legacy initialize handshake, and
# `auto` negotiation, which must land in the modern era. Each connects, lists every tool
# and calls some. Usage: python interop.py http://127.0.0.1:PORT/mcp [PREFIX]
# (PREFIX, e.g. `up.`, when the demo tools are an upstream's served through a gateway).
import asyncio
import json
import sys

from mcp import Client, Implementation

URL = sys.argv[1]
PREFIX = sys.argv[2] if len(sys.argv) > 2 else ""
MODERN = "2026-07-28"
# What `mode="legacy"` offers in `initialize`: the SDK's newest handshake-era revision.
HANDSHAKE = "2025-11-25"


class InteropFailure(Exception):
    """Bondry answered other than the checks expect."""


def named(name):
    return f"{PREFIX}{name}"


def check(condition, message):
    if not condition:
        raise InteropFailure(message)


def shown(result):
    return json.dumps(result.model_dump(mode="json", by_alias=True, exclude_none=True))


async def session(label, mode, expected):
    client_info = Implementation(name="bondry-interop-py", version="0")
    async with Client(URL, mode=mode, client_info=client_info) as client:
        version = client.protocol_version
        check(version == expected, f"{label}: negotiated {version}, expected {expected}")

        tools = []
        cursor = None
        while True:
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
        names = [tool.name for tool in tools]
        check(named("demo.echo") in names and named("demo.forecast") in names, f"{label}: tools {names}")
        check(named("admin.reset") not in names, f"{label}: admin.reset is listed")

        echo = await client.call_tool(named("demo.echo"), {"text": "hi"})
        check((echo.structured_content or {}).get("text") == "hi", f"{label}: demo.echo gave {shown(echo)}")
        forecast = await client.call_tool(named("demo.forecast"), {"region": "eu-west", "days": 2})
        check(
            not forecast.is_error and (forecast.structured_content or {}).get("region") == "eu-west",
            f"{label}: demo.forecast gave {shown(forecast)}",
        )
        invalid = await client.call_tool(named("demo.add"), {"a": "x", "b": 1})
        check(invalid.is_error, f"{label}: invalid input gave {shown(invalid)}")

    print(f"ok {label}: {version}, {len(tools)} tools")


async def main():
    await session("legacy handshake", "legacy", HANDSHAKE)
    await session("auto negotiation", "auto", MODERN)


def leaves(group):
    for exception in group.exceptions:
        yield from leaves(exception) if isinstance(exception, BaseExceptionGroup) else [exception]


try:
    asyncio.run(main())
except* InteropFailure as failures:
    # A failed check leaves through the SDK's task groups, nested in exception groups: report the check.
    sys.exit("\n".join(f"interop.py: {failure}" for failure in leaves(failures)))
