"""NewsLoop's one command line (`newsloop`, newsloop.cli) and the generator of its reference pages
(`python -m newsloop.reference`)."""
