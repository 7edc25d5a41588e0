"""The maintainer's room: the Admin tab, its actions, reports, plots, jobs and sign-in."""
