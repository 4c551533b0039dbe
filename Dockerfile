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

# --- 2. Python dependencies in a virtualenv ---------------------------------------------
FROM python:3.11-slim AS builder
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1
WORKDIR /srv
# Dependencies first (a cached layer until pyproject.toml changes). The project is
# installed editable, pointing at /srv/app: the package finds migrations/ and assets/
# beside it (app/storage/migrate.py, app/config.py), exactly as in a checkout. A stub
# package is enough here; the real code is copied into the final image at /srv/app.
COPY pyproject.toml README.md ./
RUN python -m venv /opt/venv \
    && mkdir app && touch app/__init__.py \
    && /opt/venv/bin/pip install -e . \
    && rm -r app

# --- 3. The runtime image ------------------------------------------------------------
FROM python:3.11-slim AS runtime
RUN useradd --create-home --uid 10001 --user-group jet \
    && mkdir /data && chown jet:jet /data && chmod 700 /data
COPY --from=builder /opt/venv /opt/venv
WORKDIR /srv
COPY migrations ./migrations
COPY app ./app
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
