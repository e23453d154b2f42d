"""kvengine: the bundled paged KV-cache engine that ci-tool's stages run."""
