# Jet Memory: one image for the API and the worker.
#   docker build -t jet-memory .
#   docker run -p 8000:8000 -v jet-data:/data jet-memory                 # API
#   docker run -v jet-data:/data -e JET_REDIS_URL=redis://redis:6379 jet-memory worker
# GraphiQL's JS/CSS come from the npm registry at build time (pinned by the lock file).

FROM node:20-slim AS assets
WORKDIR /src/assets
COPY assets/package.json assets/package-lock.json ./
RUN npm ci --no-audit --no-fund --loglevel=error

FROM python:3.11-slim
RUN useradd --create-home --uid 10001 jet && mkdir /data && chown jet /data
WORKDIR /srv
# Dependencies first (cached layer), then the code. Installed editable so the package
# finds migrations/ and assets/ beside it, as in a checkout.
COPY pyproject.toml README.md ./
RUN python -m venv /opt/venv && mkdir app && touch app/__init__.py \
    && /opt/venv/bin/pip install --no-cache-dir -e . && rm -r app
COPY migrations ./migrations
COPY app ./app
COPY --from=assets /src/assets/node_modules ./assets/node_modules
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    JET_DATA_DIR=/data \
    JET_HOST=0.0.0.0 \
    JET_PORT=8000 \
    JET_ASSETS_DIR=/srv/assets/node_modules
USER jet
VOLUME ["/data"]
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=3s --start-period=10s \
  CMD python -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=2)" || exit 1
ENTRYPOINT ["jet-memory"]
CMD ["serve"]
