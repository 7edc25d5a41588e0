# NewsLoop on a plain Linux server: `docker build -t newsloop . && docker run -p 7860:7860 -v newsloop:/var/lib/newsloop newsloop`
FROM python:3.11-slim

# Live state (SQLite, locks, the working registry) on the container's disk; snapshots to the volume.
ENV NEWSLOOP_HOST=0.0.0.0 \
    NEWSLOOP_HOME=/srv/newsloop/home \
    NEWSLOOP_DURABLE_DIR=/var/lib/newsloop/durable \
    GRADIO_ANALYTICS_ENABLED=False \
    PIP_NO_CACHE_DIR=1

WORKDIR /srv/newsloop/app
# What a Space installs, and nothing else: requirements.txt pins every package and takes torch's CPU build from
# PyTorch's CPU index (named in the file). Installed before the code is copied, so a code change keeps this layer.
COPY requirements.txt .
RUN pip install -r requirements.txt
COPY . .
RUN useradd --system --home /srv/newsloop newsloop \
    && mkdir -p /srv/newsloop/home /var/lib/newsloop \
    && chown -R newsloop /srv/newsloop /var/lib/newsloop

USER newsloop
VOLUME ["/var/lib/newsloop"]
EXPOSE 7860
# SIGTERM (docker stop) triggers a last snapshot before the process exits.
STOPSIGNAL SIGTERM
CMD ["python", "app.py"]
