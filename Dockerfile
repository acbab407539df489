# chartr: gunicorn + uvicorn workers on a slim Python, as a non-root user.
# State lives only in the two volumes: /data (database, runtime state) and
# /config (secret key, chartr.env, initial admin password). See docs/persistence.md.
ARG PYTHON_IMAGE=python:3.12-slim-bookworm

# --- build: dependencies into a venv, static files collected ---------------
FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PATH=/opt/venv/bin:$PATH
RUN python -m venv /opt/venv
WORKDIR /app
# Dependencies first, so a source change does not reinstall them.
COPY pyproject.toml ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" \
        > /tmp/requirements.txt \
    && pip install --no-cache-dir -r /tmp/requirements.txt \
    && rm /tmp/requirements.txt
COPY . .
# collectstatic writes nothing but static files (settings create no dir and no
# key); throwaway paths all the same, so nothing of the build can reach /data or /config.
RUN CHARTR_SECRET_KEY=build-time-only-not-a-secret \
    CHARTR_DATA_DIR=/tmp/build/data \
    XDG_CONFIG_HOME=/tmp/build/config \
    CHARTR_STATIC_ROOT=/app/staticfiles \
    python manage.py collectstatic --noinput --verbosity 0 \
    && rm -rf /tmp/build

# --- runtime ---------------------------------------------------------------
FROM ${PYTHON_IMAGE}
RUN groupadd --system --gid 10001 chartr \
    && useradd --system --uid 10001 --gid chartr --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin chartr \
    && mkdir -p /data /config \
    && chown chartr:chartr /data /config \
    && chmod 0700 /data /config
COPY --from=build /opt/venv /opt/venv
COPY --from=build /app /app
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PYTHONPATH=/app \
    CHARTR_DATA_DIR=/data XDG_CONFIG_HOME=/config \
    CHARTR_BIND=0.0.0.0:8000 \
    CHARTR_STATIC_ROOT=/app/staticfiles \
    CHARTR_COLLECTSTATIC=0 \
    CHARTR_PYTHON=python
WORKDIR /app
USER 10001:10001
VOLUME ["/data", "/config"]
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=10s --start-period=60s --retries=3 \
    CMD ["python", "-m", "chartr.healthcheck", "/healthz"]
ENTRYPOINT ["/app/bin/chartr-entrypoint"]
