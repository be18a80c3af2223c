"""OpenTelemetry traces from the standard `OTEL_*` variables (issue 18).

FastMCP emits a span per request through opentelemetry-api (tool name, MCP method,
session), which records nothing until an SDK is configured. With the `[otel]` extra
installed and `OTEL_TRACES_EXPORTER` (`otlp` or `console`) or an OTLP endpoint set, the
server configures one: resource attributes from `OTEL_SERVICE_NAME` /
`OTEL_RESOURCE_ATTRIBUTES`, the OTLP/HTTP exporter from its own `OTEL_EXPORTER_OTLP_*`
variables. The console exporter writes to stderr (stdout carries the stdio protocol).
Our pipeline adds `awm.outcome` (`ok` / `error`) to each tool call's span; no span ever
carries arguments, file contents or error texts (an error's type only).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping

log = logging.getLogger("agent_workspace_mcp")

OUTCOME_ATTRIBUTE = "awm.outcome"


def wanted(environ: Mapping[str, str]) -> str | None:
    """Which exporter the environment asks for, if any."""
    exporter = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter in ("none", ""):
        if exporter == "" and (
            environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
            or environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        ):
            return "otlp"
        return None
    return exporter


def configure(environ: Mapping[str, str]) -> str | None:
    """Install a tracer provider as the environment asks; returns a warning, or None."""
    exporter = wanted(environ)
    if exporter is None:
        return None
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
    except ImportError:
        return (
            "OTEL_* is set but the OpenTelemetry SDK is not installed; install "
            "agent-workspace-mcp[otel] to export traces"
        )
    if exporter == "console":
        span_exporter = ConsoleSpanExporter(out=sys.stderr)
    elif exporter == "otlp":
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError:
            return (
                "OTEL_TRACES_EXPORTER=otlp needs the OTLP exporter; install "
                "agent-workspace-mcp[otel]"
            )
        span_exporter = OTLPSpanExporter()
    else:
        return f"OTEL_TRACES_EXPORTER={exporter} is not supported here; use otlp or console"
    # Resource.create reads OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES itself; our
    # name applies only when neither names the service (passed attributes would win).
    named = environ.get("OTEL_SERVICE_NAME") or "service.name=" in environ.get(
        "OTEL_RESOURCE_ATTRIBUTES", ""
    )
    resource = Resource.create({} if named else {"service.name": "agent-workspace-mcp"})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(_scrubber())  # first: before anything can record text
    provider.add_span_processor(BatchSpanProcessor(span_exporter))
    trace.set_tracer_provider(provider)
    global _active
    _active = True
    return None


def _scrubbed_status(set_status):
    def set_status_code_only(status, description=None):
        from opentelemetry.trace import Status

        code = status.status_code if isinstance(status, Status) else status
        set_status(Status(code))

    return set_status_code_only


def _type_only(span):
    def record_exception(exception, attributes=None, timestamp=None, escaped=False):
        span.add_event("exception", {"exception.type": type(exception).__name__}, timestamp)

    return record_exception


def _scrubber():
    from opentelemetry.sdk.trace import SpanProcessor

    class ScrubErrors(SpanProcessor):
        """Spans keep an error's type, never its text: FastMCP records the exception's
        message as the span status and an `exception` event, and our errors quote what
        they are about ("closest match at line 2: line 2 is '<the file's line>'"), so an
        exporter would receive file contents (issue 28). Each span's two recording
        methods are replaced when it starts, so nothing later can add the text."""

        def on_start(self, span, parent_context=None) -> None:
            span.set_status = _scrubbed_status(span.set_status)
            span.record_exception = _type_only(span)

    return ScrubErrors()


_active = False


def active() -> bool:
    """Whether this process exports traces (the pipeline then marks outcomes)."""
    return _active


def flush() -> None:
    """Export what is buffered (at shutdown)."""
    try:
        from opentelemetry import trace

        provider = trace.get_tracer_provider()
        if hasattr(provider, "shutdown"):
            provider.shutdown()
    except Exception as exc:  # never let telemetry break a shutdown
        log.warning("trace export at shutdown failed: %s", exc)


def mark_outcome(ok: bool) -> None:
    """`awm.outcome` on the current (FastMCP's tool call) span."""
    from opentelemetry import trace

    span = trace.get_current_span()
    if span.is_recording():
        span.set_attribute(OUTCOME_ATTRIBUTE, "ok" if ok else "error")
