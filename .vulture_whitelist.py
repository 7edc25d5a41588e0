"""Names vulture reports as unused that are used, each with why; .ci/run passes this file to vulture beside the
product packages (`vulture core feedback retrain web app.py .vulture_whitelist.py --min-confidence 80`)."""

# core/settings/config.py: pydantic-settings calls Settings.settings_customise_sources with every source by keyword,
# so the override must name them all; it keeps only the keyword arguments and the flat NEWSLOOP_* names, on purpose
# (no dotenv or secrets-directory source).
env_settings  # noqa: B018, F821
dotenv_settings  # noqa: B018, F821
file_secret_settings  # noqa: B018, F821

# feedback/cli.py: `newsloop golden clear --yes` requires the flag as a confirmation; click passes it to the command,
# which needs nothing more from it.
yes  # noqa: B018, F821
