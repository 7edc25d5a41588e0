"""The HTTP server: the ASGI app, the JSON API, identity, origin and fair-share guards."""
