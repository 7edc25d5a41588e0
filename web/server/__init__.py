"""What both pages stand on: the HTTP server, the JSON API, identity, guards, page cache, metrics and theme."""
