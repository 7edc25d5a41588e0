"""The maintainers' page at /admin/: its view, its actions, reports, plots, jobs and sign-in."""
