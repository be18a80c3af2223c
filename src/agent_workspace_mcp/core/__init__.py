"""Plain-Python core: containment, text I/O, limits, state. Imports nothing from MCP."""
