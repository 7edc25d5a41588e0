"""Training side of NewsLoop: the model commands (`cli`, `actions`) over the runs (`run`, `bootstrap`,
`challenger`), the promotion gate, the recipe for a changed taxonomy (`topics`), the label-error search, the export
to a registered version, training, and the classifier at the bottom (the layers: docs/contributing/architecture.md).

All torch code lives here; `core` serves what this package exports.
"""
