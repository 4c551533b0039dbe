"""The MCP surface: memory tools for agents at /mcp (stateless Streamable HTTP, the tenant
from the API key) and `jet-memory mcp`, a stdio proxy to a remote server's /mcp."""
