"""Ask rypsok one question the way an MCP host does, and print the answer.

    python first_search.py HOST_CONFIG.json "your question"

It reads the server entry named "rypsok" from a host's configuration file
(Claude Desktop's and Cursor's "mcpServers", VS Code's "servers"), starts that
command over stdio, lists the tools and calls web_search once.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


def server_entry(host_config_path: str) -> StdioServerParameters:
    with open(host_config_path, encoding="utf-8") as handle:
        host_config = json.load(handle)
    servers = host_config.get("mcpServers") or host_config["servers"]
    entry = servers["rypsok"]
    return StdioServerParameters(
        command=entry["command"],
        args=entry.get("args", []),
        env={**os.environ, **entry.get("env", {})},
    )


async def ask(host_config_path: str, question: str) -> int:
    async with (
        stdio_client(server_entry(host_config_path)) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        tools = await session.list_tools()
        sys.stdout.write("tools: " + ", ".join(tool.name for tool in tools.tools) + "\n")
        result = await session.call_tool("web_search", {"query": question, "max_results": 5})
    answer = result.structured_content or json.loads(result.content[0].text)
    sys.stdout.write(f"outcome: {answer['outcome']}\n")
    for number, item in enumerate(answer.get("results", []), start=1):
        sys.stdout.write(f"{number}. {item['title']}\n   {item['url']}\n")
    for notice in answer.get("notices", []):
        sys.stdout.write(f"notice {notice['code']}: {notice['message']}\n")
    if answer["outcome"] == "error":
        sys.stdout.write(f"error {answer['error']['kind']}: {answer['error']['message']}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(ask(sys.argv[1], sys.argv[2])))
