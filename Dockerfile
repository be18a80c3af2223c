# agent-workspace-mcp over Streamable HTTP, one workspace per container (docs/DEPLOY.md).
#
#   docker build -t agent-workspace-mcp .              (or: podman build ...)
#   docker build --build-arg BASE=my-registry/python:3.12-slim ...   another base image
#   docker build --secret id=ca_bundle,src=/etc/ssl/certs/ca-certificates.crt ...
#       a CA bundle for a TLS-intercepting proxy (used by pip only, never kept)
#
# Only the package registries are reached (Debian's and PyPI); nothing else is downloaded.
ARG BASE=python:3.12-slim

FROM ${BASE} AS deps
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
RUN python -m venv /opt/venv
# The dependencies in a stage of their own, keyed on pyproject.toml alone: a rebuild after
# a change to the source reuses it, here and as the runtime stage's venv layer.
COPY pyproject.toml /src/
RUN --mount=type=secret,id=ca_bundle,required=false \
    if [ -s /run/secrets/ca_bundle ]; then export PIP_CERT=/run/secrets/ca_bundle; fi; \
    python -c "import tomllib; print('\n'.join(tomllib.load(open('/src/pyproject.toml', 'rb'))['project']['dependencies']))" > /tmp/requirements.txt \
    && /opt/venv/bin/pip install -r /tmp/requirements.txt

FROM deps AS build
# The build backend (pyproject's build-system) in a layer of its own too, so the wheel
# is built without fetching it again on every source change.
RUN --mount=type=secret,id=ca_bundle,required=false \
    if [ -s /run/secrets/ca_bundle ]; then export PIP_CERT=/run/secrets/ca_bundle; fi; \
    python -m venv /opt/backend \
    && python -c "import tomllib; print('\n'.join(tomllib.load(open('/src/pyproject.toml', 'rb'))['build-system']['requires']))" > /tmp/backend.txt \
    && /opt/backend/bin/pip install -r /tmp/backend.txt
COPY README.md LICENSE /src/
COPY src /src/src
RUN /opt/backend/bin/pip wheel --no-deps --no-build-isolation --wheel-dir /wheels /src

FROM ${BASE}
# git for the read-only git tools; bubblewrap for --sandbox bwrap where the runtime
# allows user namespaces (docs/DEPLOY.md says when it does not).
RUN apt-get update \
    && apt-get install -y --no-install-recommends git bubblewrap \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --gid 10001 mcp \
    && useradd --uid 10001 --gid 10001 --no-create-home --shell /usr/sbin/nologin mcp \
    && mkdir -p /workspace \
    && chown 10001:10001 /workspace
# The dependencies' venv is a layer of its own (reused while pyproject.toml is unchanged);
# the package goes on top as a wheel. COPY, not a bind mount: a mounted wheel does not
# invalidate the RUN's cache in every builder (buildah kept the old package).
COPY --from=deps /opt/venv /opt/venv
COPY --from=build /wheels /tmp/wheels
RUN PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 \
    /opt/venv/bin/pip install --no-deps /tmp/wheels/*.whl \
    && rm -rf /tmp/wheels
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    TMPDIR=/tmp
USER 10001:10001
WORKDIR /workspace
EXPOSE 3333
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:3333/health', timeout=4)"]
ENTRYPOINT ["agent-workspace-mcp"]
CMD ["--root", "/workspace", "--http", "--host", "0.0.0.0", "--port", "3333"]
