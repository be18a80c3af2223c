"""Transports: stdio (default) and Streamable HTTP."""
