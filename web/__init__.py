"""The page: client identity, user and admin actions, and the Gradio layout. Imports core and feedback only."""
