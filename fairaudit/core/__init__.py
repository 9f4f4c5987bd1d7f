"""The host: configuration (the chain spec, its parameters and limits), the plugin manager and
component base classes, the data model, input reading, the engines, and the runner's stages.

Nothing here is imported by ``import fairaudit``; each module loads when it is first used.
"""
