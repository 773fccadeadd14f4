# Two commands set everything up from Python 3.11+, make and the package registry:
#   make run    install the runtime and serve MCP over stdio (stdout carries MCP only)
#   make test   install the runtime and the gate's tools, then run the whole gate
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
RUN_STAMP := $(VENV)/.installed-run
DEV_STAMP := $(VENV)/.installed-dev
REQ_TRACE := ../shared/tools/req_trace.py
LINT_PATHS := src tests tools fuzz mutation $(wildcard bench)
SECONDS ?= 30

.PHONY: run test lint typecheck layers unit licenses audit bench lock docs clean \
	dist dist-check book contract-snapshot image image-check image-repro image-podman fuzz live mutation release-check

# Every install step writes to stderr: `make run` is started by MCP hosts, whose
# stdout must carry protocol messages only.
$(BIN)/python:
	@$(PYTHON) -m venv $(VENV) 1>&2

$(RUN_STAMP): requirements/run.lock pyproject.toml | $(BIN)/python
	@$(BIN)/pip install -q --disable-pip-version-check -r requirements/run.lock 1>&2
	@$(BIN)/pip install -q --disable-pip-version-check --no-deps -e . 1>&2
	@touch $@

$(DEV_STAMP): requirements/dev.lock pyproject.toml | $(BIN)/python
	@$(BIN)/pip install -q --disable-pip-version-check -r requirements/dev.lock 1>&2
	@$(BIN)/pip install -q --disable-pip-version-check --no-deps -e . 1>&2
	@touch $@ $(RUN_STAMP)

run: $(RUN_STAMP)
	@$(BIN)/rypsok serve $(ARGS)

# dist comes before unit: the release tests install the wheel offline from its bundle.
test: lint typecheck layers book dist unit licenses audit
	@if [ -f $(REQ_TRACE) ]; then $(BIN)/python $(REQ_TRACE) --tests tests || true; fi

lint: $(DEV_STAMP)
	$(BIN)/ruff format --check $(LINT_PATHS)
	$(BIN)/ruff check $(LINT_PATHS)

typecheck: $(DEV_STAMP)
	$(BIN)/mypy

layers: $(DEV_STAMP)
	$(BIN)/lint-imports --no-cache

unit: $(DEV_STAMP)
	$(BIN)/pytest -p no:cacheprovider -q

licenses: $(DEV_STAMP)
	$(BIN)/pip-licenses --partial-match --fail-on "GPL;General Public License" 1>/dev/null \
		&& echo "licenses: no GPL, AGPL or LGPL dependency"

audit: $(DEV_STAMP)
	@$(BIN)/python tools/audit.py

# Every fuzz target for SECONDS each (docs/assurance.md). atheris has wheels for a
# few platforms only: where it does not install, the run says so and runs the
# Hypothesis targets for the same time instead; it never passes silently.
fuzz: $(DEV_STAMP)
	@$(BIN)/pip install -q --disable-pip-version-check -r requirements/fuzz.lock 1>&2 \
		|| echo "fuzz: atheris (requirements/fuzz.lock) could not be installed on this platform" 1>&2
	$(BIN)/python -m fuzz.run --seconds $(SECONDS)

# mutmut over the security modules (mutation/run.py); fails on a surviving mutant
# that mutation/exclusions.txt does not list with a reason. MODULES=... picks some.
mutation: $(DEV_STAMP)
	$(BIN)/python -m mutation.run $(foreach m,$(MODULES),--module $(m))

# One query to each enabled engine, within its terms (docs/assurance.md). Reaches
# the real providers: never part of `test`. Exit 3 where nothing is reachable.
live: $(RUN_STAMP)
	$(BIN)/python tools/live.py $(ARGS)

# Every release job in parallel, one verdict line each (tools/release_check.py).
# Fails when any job fails or reports SKIPPED: offline, live and audit fail.
# ARGS goes to the tool, e.g. ARGS='--only live audit' or --job NAME=COMMAND.
# The image job builds from the offline bundle in dist/ (tools/image.py): made first.
release-check: $(DEV_STAMP) dist
	@$(BIN)/pip install -q --disable-pip-version-check -r requirements/fuzz.lock 1>&2 \
		|| echo "release-check: atheris could not be installed; the fuzz job runs Hypothesis" 1>&2
	$(BIN)/python tools/release_check.py --fuzz-seconds $(SECONDS) $(ARGS)

bench: $(DEV_STAMP)
	$(BIN)/python -m bench

docs: $(DEV_STAMP)
	$(BIN)/python tools/gen_docs.py
	$(BIN)/python tools/book_gen.py

# The release files in dist/: wheel, sdist, the offline bundle for Linux x86_64 and
# SHA256SUMS (tools/dist.py). PLATFORM=manylinux2014_aarch64 makes the aarch64 bundle.
PLATFORM ?= manylinux2014_x86_64
dist: $(DEV_STAMP)
	@$(BIN)/python tools/dist.py --platform $(PLATFORM) 1>&2

# Build the wheel and the sdist twice and compare the bytes.
dist-check: $(DEV_STAMP)
	@$(BIN)/python tools/dist.py --check-reproducible

# The book (docs/book, mkdocs.yml) as a static site in site/; any warning fails.
book: $(DEV_STAMP)
	@NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet --site-dir site

# After a reviewed change of the external contract (and its CHANGELOG entry):
# rewrite the committed snapshot of the tool definitions.
contract-snapshot: $(DEV_STAMP)
	$(BIN)/python tools/contract_snapshot.py --write

# The OCI image archive (needs root, mmdebstrap; ARCH=arm64 in the release workflow).
# MIRROR: a Debian mirror URL; a snapshot of the archive at a fixed date makes builds on
# different days byte-equal (docs/book/tutorials/06-image.md).
ARCH ?= amd64
MIRROR ?=
# make image builds from the files make dist left in dist/ (run make dist first).
image: $(DEV_STAMP)
	$(BIN)/python tools/image.py --arch $(ARCH) --mirror "$(MIRROR)"

# make image, then a second build in a fresh folder: the two archives must be byte-equal.
# Not part of make test (root, mmdebstrap, two builds); the release workflow runs it.
image-repro: $(DEV_STAMP)
	$(BIN)/python tools/image.py --check-reproducible --arch $(ARCH) --mirror "$(MIRROR)"

# Unpack the archive (umoci), start it under chroot as its user, call it over HTTP.
image-check: $(DEV_STAMP)
	$(BIN)/python tools/image.py --check --arch $(ARCH)

# The book's podman command (docs/book/examples/image/run-image.sh) run on the archive,
# called over loopback with and without the key (root, podman).
image-podman: $(DEV_STAMP)
	$(BIN)/python tools/image.py --check-podman --arch $(ARCH)

# Re-resolve the locks from pyproject.toml and requirements/dev.in.
lock:
	rm -rf .lockvenv && $(PYTHON) -m venv .lockvenv
	.lockvenv/bin/pip install -q . && .lockvenv/bin/pip freeze --exclude rypsok > requirements/run.lock
	.lockvenv/bin/pip install -q -r requirements/dev.in \
		&& .lockvenv/bin/pip freeze --all --exclude rypsok --exclude pip > requirements/dev.lock
	rm -rf .lockvenv

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache dist site build
