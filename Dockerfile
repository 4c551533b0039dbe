# Jet Memory: one image for the API and the worker.
#   docker build -t jet-memory .
#   docker run -p 8000:8000 -v jet-data:/data -e JET_REDIS_URL=redis://redis:6379/0 jet-memory
#   docker run -v jet-data:/data -e JET_REDIS_URL=redis://redis:6379/0 jet-memory worker
#   docker compose up            # API + worker + Redis (docker-compose.yml)
# GraphiQL's JS/CSS come from the npm registry at build time (pinned by the lock file).
# tests/test_entrypoints.py runs this file's ENTRYPOINT/CMD and HEALTHCHECK outside Docker.

# --- 1. GraphiQL's assets --------------------------------------------------------------
FROM node:20-slim AS assets
WORKDIR /src/assets
COPY assets/package.json assets/package-lock.json ./
RUN npm ci --no-audit --no-fund --loglevel=error --omit=dev

# --- 2. The package, built as a wheel, in a virtualenv ----------------------------------
FROM python:3.11-slim AS builder
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1
WORKDIR /src
# The local embedder first, from the hash-checked file `make` uses (a cached layer until it
# changes); its wheels are for x86_64: elsewhere the image searches by keywords only.
COPY requirements/embedder.txt ./requirements/
RUN python -m venv /opt/venv \
    && { /opt/venv/bin/pip install --require-hashes --no-deps -r requirements/embedder.txt \
         || echo "the local embedder could not be installed: search stays keyword-only"; }
# Then the package: a wheel holding app/, its migrations and page files (setup.py), and its
# dependencies. tests/test_install.py runs these same pip commands outside Docker.
COPY pyproject.toml setup.py README.md ./
COPY app ./app
COPY migrations ./migrations
RUN /opt/venv/bin/pip wheel --no-deps --wheel-dir dist . \
    && /opt/venv/bin/pip install dist/jet_memory-*.whl

# --- 3. The runtime image ------------------------------------------------------------
FROM python:3.11-slim AS runtime
RUN useradd --create-home --uid 10001 --user-group jet \
    && mkdir /data && chown jet:jet /data && chmod 700 /data
COPY --from=builder /opt/venv /opt/venv
WORKDIR /srv
COPY --from=assets /src/assets/node_modules ./assets/node_modules
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    JET_DATA_DIR=/data \
    JET_HOST=0.0.0.0 \
    JET_PORT=8000 \
    JET_WORKERS=0 \
    JET_ASSETS_DIR=/srv/assets/node_modules
USER jet
VOLUME ["/data"]
EXPOSE 8000
# JET_WORKERS=0: serve runs one API process per CPU core the container may use (its cpuset).
# For the API (serve). docker-compose.yml gives the worker its own check (arq --check).
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["python", "-c", "import os, urllib.request as u; u.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('JET_PORT', '8000'), timeout=3)"]
ENTRYPOINT ["jet-memory"]
CMD ["serve"]
