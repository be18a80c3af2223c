"""FastMCP middleware: cross-cutting behaviour applied once to every tool call."""
