"""A small MCP server (official Python SDK) with behaviours the reference servers lack.

Usage: python fixture_server.py MODE
  collide  two tools whose names map to one sandbox name (`get-user`, `get_user`)
  dynamic  `grow` adds the tool `added_later` and sends notifications/tools/list_changed
"""

import sys

from mcp.server.mcpserver import Context, MCPServer

MODE = sys.argv[1]
server = MCPServer(f"fixture-{MODE}")

if MODE == "collide":

    @server.tool(name="get-user")
    def get_user_dash(id: str) -> str:
        return id

    @server.tool(name="get_user")
    def get_user_underscore(id: str) -> str:
        return id

elif MODE == "dynamic":

    def added_later(x: int) -> int:
        """Doubles x (added at run time)."""
        return 2 * x

    @server.tool()
    async def grow(ctx: Context) -> str:
        """Adds one more tool to this server."""
        server.add_tool(added_later)
        await ctx.session.send_tool_list_changed()
        return "grown"

else:
    sys.exit(f"unknown mode {MODE}")

server.run("stdio")
