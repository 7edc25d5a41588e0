"""Settings: the one typed model of every knob, the policies built from it, hosting rules."""
