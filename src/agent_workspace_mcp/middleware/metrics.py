"""Prometheus metrics for `--http` (issue 18): what an operator graphs and alerts on.

- `awm_tool_calls_total{tool,outcome}`: calls by tool and outcome (`ok` / `error`);
- `awm_tool_call_seconds{tool}`: call latency (histogram);
- `awm_answer_bytes_total{tool}`: bytes of text answers, what the agents' context pays;
- `awm_jobs_running`: background jobs running now;
- `awm_auth_failures_total`: requests refused for missing or bad credentials.

One registry per server (never the process-global one), so two servers in one process
(tests, library use) keep their own counts. Only the HTTP transport builds it.

Under `--workers N` the supervisor sets PROMETHEUS_MULTIPROC_DIR: prometheus-client
then keeps every counter and histogram in per-process files there, and a scrape of any
worker adds up all of them (workers that were replaced included, as counters must).
The running-jobs gauge is read from the shared job records at scrape time instead.
"""

from __future__ import annotations

import os
import time

from fastmcp.server.middleware import Middleware, MiddlewareContext
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily

from ..core.limits import LATENCY_BUCKETS_SECONDS
from ..services import Services
from .outcome import Outcome, observed

# Tool calls last from a millisecond (a small read) to minutes (a command).
LATENCY_BUCKETS = LATENCY_BUCKETS_SECONDS


class Metrics:
    def __init__(self, services: Services) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.calls = Counter(
            "awm_tool_calls",
            "Tool calls by tool and outcome.",
            ["tool", "outcome"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "awm_tool_call_seconds",
            "Tool call latency.",
            ["tool"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.answer_bytes = Counter(
            "awm_answer_bytes", "Bytes of text answers.", ["tool"], registry=self.registry
        )
        self.auth_failures = Counter(
            "awm_auth_failures",
            "Requests refused for missing or bad credentials.",
            registry=self.registry,
        )
        self.shared_dir = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
        self.jobs = services.jobs
        if self.shared_dir is None:
            running = Gauge("awm_jobs_running", JOBS_HELP, registry=self.registry)
            running.set_function(lambda: services.jobs.running_count())

    def exposition(self) -> bytes:
        if self.shared_dir is None:
            return generate_latest(self.registry)
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry, self.shared_dir)
        registry.register(_RunningJobs(self.jobs))
        return generate_latest(registry)


JOBS_HELP = "Background jobs running."


class _RunningJobs:
    """Every worker's running jobs, counted from the shared records when scraped."""

    def __init__(self, jobs) -> None:
        self.jobs = jobs

    def collect(self):
        yield GaugeMetricFamily("awm_jobs_running", JOBS_HELP, value=self.jobs.running_count())


class MetricsMiddleware(Middleware):
    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics
        self._known: set[str] = set()

    async def _label(self, context: MiddlewareContext) -> str:
        """The tool's name, or `unknown`: a client choosing names must not grow the
        label set (each label value is a time series kept for the process's life)."""
        name = context.message.name
        if name not in self._known:
            ctx = context.fastmcp_context
            if ctx is None or await ctx.fastmcp.get_tool(name) is None:
                return "unknown"
            self._known.add(name)
        return name

    async def on_call_tool(self, context: MiddlewareContext, call_next):
        tool = await self._label(context)
        outcome = Outcome()
        started = time.perf_counter()
        result = None
        try:
            result = await observed(context, call_next, outcome)
            return result
        finally:
            self.metrics.latency.labels(tool).observe(time.perf_counter() - started)
            self.metrics.calls.labels(tool, "ok" if outcome.ok else "error").inc()
            size = sum(
                len(getattr(block, "text", "").encode("utf-8", "surrogatepass"))
                for block in getattr(result, "content", None) or ()
            )
            if size:
                self.metrics.answer_bytes.labels(tool).inc(size)
