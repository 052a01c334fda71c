"""Drives `dream mcp` over stdio with the official MCP Python SDK (PyPI `mcp`).

Usage: python tests/python/mcp_client.py PATH/TO/dream
Runs in a temporary working directory with its own DREAM_CONFIG_DIR; exits
non-zero on the first failed check. `.ci/run` runs it in a venv.
"""

import asyncio
import json
import os
import sys
import tempfile

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


def structured(result):
    assert not is_error(result), result
    value = getattr(result, "structured_content", None) or getattr(result, "structuredContent", None)
    return value if value is not None else json.loads(result.content[0].text)


def is_error(result):
    return getattr(result, "is_error", None) or getattr(result, "isError", None)


async def main(dream: str) -> None:
    work = tempfile.mkdtemp(prefix="dream-mcp-py-")
    config = tempfile.mkdtemp(prefix="dream-mcp-py-config-")
    env = {"PATH": os.environ.get("PATH", ""), "DREAM_CONFIG_DIR": config, "NO_COLOR": "1"}
    params = StdioServerParameters(command=dream, args=["mcp"], env=env, cwd=work)
    with open(os.devnull, "w") as devnull:
        async with stdio_client(params, errlog=devnull) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                names = {t.name for t in (await session.list_tools()).tools}
                assert {"recall", "remember", "log_session", "dream", "list", "show", "history", "stats"} <= names, names
                assert not names & {"forget", "confirm", "apply"}, names

                await session.call_tool(
                    "log_session", {"messages": [{"role": "user", "content": "Call me Sam."}]}
                )
                report = structured(await session.call_tool("dream", {"force": True}))
                sam = report["created"][0]
                recalled = structured(await session.call_tool("recall", {"query": "what is the user called"}))
                verdicts = {r["id"]: r["verdict"] for r in recalled["records"]}
                assert verdicts.get(sam) == "used", recalled
                assert recalled["policy"]["line"].startswith("POLICY: used"), recalled

                mine = structured(
                    await session.call_tool(
                        "remember", {"name": "Deploy day", "content": "The billing service deploys on Fridays."}
                    )
                )
                recalled = structured(await session.call_tool("recall", {"query": "billing service deploys"}))
                held = [r for r in recalled["records"] if r["id"] == mine["remembered"]]
                assert held and held[0]["verdict"] == "held", recalled
                assert "unconfirmed-source" in held[0]["reason"], held

                bad = await session.call_tool("show", {"id": "../../etc/passwd"})
                assert is_error(bad), bad
                bad = await session.call_tool("recall", {"query": 7})
                assert is_error(bad), bad
                stats = structured(await session.call_tool("stats", {}))
                assert stats["memories"] == 2, stats
    print("python MCP client: ok")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
