"""Build once, test many: `ci-tool build` makes what every test stage installs, once per pipeline.

    spec.py        what the stages install (the torch pin, the project with its extras) and the two shell
                   lines the generated pipelines run: build, and install from the build
    inputs.py      the inputs' digest: the build spec, this Python and machine, the package sources
    manifest.py    manifest.json: the commit, the digest, the wheels and their sha256
    wheelhouse.py  the build itself (`pip wheel`), and the reuse of an earlier build of the same inputs

A build folder (layout.BUILD_DIR) holds the project's wheel and the wheels of everything the stages install
with it, flat, so that `pip install --no-index --find-links ci-build ...` resolves and downloads nothing.
"""
