# toolhost build. `make run` builds the host and the bundled plugins and runs
# the main job; `make test` builds everything and runs every test.

CARGO       ?= cargo
WASM_TARGET := wasm32-wasip2
GUEST_OUT   := guest-plugins/target/$(WASM_TARGET)/release
PLUGIN_DIR  := build/plugins
TOOLHOST    := target/release/toolhost
# What `make run` builds: the dev profile `make test` builds in too, so the
# second command reuses the first one's compile.
DEV_TOOLHOST := target/debug/toolhost

# The plugins bundled in the default plugin directory, in registration order.
# Only what a user wants served: test fixtures (text_tools' `fail` and
# `slow_count` among them) stay in guest-plugins/target, where tests take them.
BUNDLED := format_pipeline:10-format-pipeline

.PHONY: all run setup plugins bundled host dev-host test lint bench clean toolchains lang-plugins peer-extism

all: host plugins

## Toolchains: the wasm32-wasip2 target for Rust plugins.
setup:
	@command -v rustup >/dev/null || { echo "rustup is required: https://rustup.rs" >&2; exit 1; }
	@rustup target list --installed | grep -qx $(WASM_TARGET) || rustup target add $(WASM_TARGET)

# Their packages, for building them alone (`make run`).
BUNDLED_PACKAGES := $(foreach entry,$(BUNDLED),-p $(subst _,-,$(firstword $(subst :, ,$(entry)))))

## Every Rust guest plugin (bundled plugins and test fixtures).
plugins: bundled
	cd guest-plugins && $(CARGO) build --release --target $(WASM_TARGET) --locked

## The bundled plugins alone, in the default plugin directory: what `make
## run` serves.
bundled: setup
	cd guest-plugins && $(CARGO) build --release --target $(WASM_TARGET) --locked $(BUNDLED_PACKAGES)
	@mkdir -p $(PLUGIN_DIR)
	@rm -f $(PLUGIN_DIR)/*.wasm
	@for entry in $(BUNDLED); do \
		crate=$${entry%%:*}; file=$${entry##*:}; \
		cp $(GUEST_OUT)/$$crate.wasm $(PLUGIN_DIR)/$$file.wasm; \
	done
	@echo "plugins in $(PLUGIN_DIR): $$(ls $(PLUGIN_DIR) | tr '\n' ' ')"

## The optimised `toolhost`, to serve and to bench with.
host:
	$(CARGO) build --release --locked -p toolhost-cli

dev-host:
	$(CARGO) build --locked -p toolhost-cli

## The main job: load the bundled plugins and show what they do to the tools.
run: dev-host bundled
	$(DEV_TOOLHOST) --plugins $(PLUGIN_DIR) plugins
	$(DEV_TOOLHOST) --plugins $(PLUGIN_DIR) tools

# Every test, none skipped: TOOLHOST_TEST_ALL=1 fails a test whose
# toolchain is missing instead of skipping it (tests/common/toolchains.rs).
# Not `host`: the tests build the command line they run themselves, and
# with the features the tests unify (a `cargo build -p toolhost-cli` first
# would compile the library twice).
#
# The library's walkthrough for embedders (host/examples/embed.rs) is among
# them: `cargo test` runs it, so it must run, not only build.
#
# The dev profile, as plain `cargo test`: unoptimised but for cranelift and
# the crates every call runs through (see the workspace's Cargo.toml),
# which compiles in a fraction of the time of `--release`, which benches
# use.
test: plugins lang-plugins venv upstream replay-trees redis docker-registry
	cd guest-plugins && $(CARGO) test --locked -p provider-kit
	TOOLHOST_TEST_ALL=1 $(CARGO) test --locked --workspace

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --release --locked --workspace --all-targets -- -D warnings
	cd guest-plugins && $(CARGO) fmt --all -- --check
	cd guest-plugins && $(CARGO) clippy --release --locked --target $(WASM_TARGET) -- -D warnings

# Each bench measures its figures against baselines in the same run, and
# those that hold targets write them into $(BENCH_OUT); the last step prints
# them all in one table.
bench: host plugins lang-plugins upstream venv replay-trees redis peer-extism
	@rm -rf $(BENCH_OUT) && mkdir -p $(BENCH_OUT)
	$(CARGO) bench --locked -p toolhost --bench plugins
	cd $(PEER_EXTISM) && $(CARGO) run --release --locked -- $(abspath $(PEER_GUEST)) --json > $(abspath $(BENCH_OUT))/extism.json
	$(CARGO) bench --locked -p toolhost --bench pipeline
	$(CARGO) bench --locked -p toolhost --bench languages
	$(CARGO) run --release --locked -p toolhost-bench --bin replay
	$(CARGO) run --release --locked -p toolhost-bench --bin replay -- --traces
	$(CARGO) run --release --locked -p toolhost-bench --bin front -- --targets $(BENCH_OUT)/front.json
	$(CARGO) run --release --locked -p toolhost-bench --bin load
	$(CARGO) run --release --locked -p toolhost-bench --bin cluster
	$(PYTHON) tests/mcp/vendors/replay.py --toolhost $(abspath $(TOOLHOST)) --plugin $(abspath $(GUEST_OUT))/github.wasm
	$(CARGO) run --release --locked -p toolhost-bench --bin table -- $(BENCH_OUT)

BENCH_OUT := build/bench

## The plugins bench's peer: the same transform in Extism, a crate outside
## the workspace (Extism brings its own wasmtime, which neither the tests
## nor CI compile), with its guest built by Extism's PDK for
## wasm32-unknown-unknown, a target only this needs.
PEER_EXTISM := bench/peers/extism
PEER_GUEST  := $(PEER_EXTISM)/guest/target/wasm32-unknown-unknown/release/peer_extism_remap.wasm

peer-extism:
	@rustup target list --installed | grep -qx wasm32-unknown-unknown || rustup target add wasm32-unknown-unknown
	cd $(PEER_EXTISM)/guest && $(CARGO) build --release --locked --target wasm32-unknown-unknown --target-dir target
	cd $(PEER_EXTISM) && $(CARGO) build --release --locked

## ---------------------------------------------------------------------------
## Plugins in other languages: JavaScript, Python, C, Go beside
## Rust. `make toolchains` installs every tool, pinned, into build/ (nothing
## by hand); `make lang-plugins` builds the five reference enrichers into
## build/reference/reference-{rust,js,py,c,go}.wasm, each with its NAME.toml.
## ---------------------------------------------------------------------------
VENV        := build/venv
VENV_STAMP  := $(VENV)/.installed
PYTHON      := $(VENV)/bin/python
WASM_TOOLS  := $(VENV)/bin/wasm-tools
COMPONENTIZE_PY := $(VENV)/bin/componentize-py
WIT_BINDGEN_VERSION := 0.63.0
WIT_BINDGEN := build/tools/bin/wit-bindgen
# Stamp of the wit-bindgen build with the C and Go generators, and the Go
# runtime package its Go bindings import (go.bytecodealliance.org/pkg, shipped
# in the wit-bindgen-go crate): copied from the crate's source, so no Go
# module proxy is needed.
WIT_BINDGEN_STAMP := build/tools/.wit-bindgen-$(WIT_BINDGEN_VERSION)-c-go
GO_PKG      := build/tools/go-pkg
GO          := $(VENV)/bin/go
REF_DIR     := build/reference
REF_JS      := guest-plugins/reference-js
REF_C       := guest-plugins/reference-c
C_GEN       := build/c-gen/reference
REF_GO      := guest-plugins/reference-go
GO_GEN      := build/go-gen/reference
# WASI preview 1 -> 0.2 (Go only targets wasip1): the reactor adapter that
# jco ships, installed with componentize-js (pinned by its package-lock.json).
WASI_ADAPTER := $(REF_JS)/node_modules/@bytecodealliance/jco/lib/wasi_snapshot_preview1.reactor.wasm

TOOL_JS     := guest-plugins/tool-js
LANG_DIR    := build/plugins-lang

toolchains: setup $(VENV_STAMP) $(WIT_BINDGEN_STAMP) $(REF_JS)/node_modules/.installed \
		$(TOOL_JS)/node_modules/.installed

# One venv for every Python tool, from the pinned requirements.txt.
$(VENV_STAMP): requirements.txt
	@command -v python3 >/dev/null || { echo "python3 (3.10+, with venv) is required: apt-get install python3 python3-venv" >&2; exit 1; }
	@python3 -m venv $(VENV) || { echo "python3 cannot create a venv: apt-get install python3-venv" >&2; exit 1; }
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements.txt
	@touch $@

# The C and Go bindings generators (not on PyPI or npm): built once into
# build/tools, with the Go runtime package from the same crate release.
$(WIT_BINDGEN_STAMP):
	@# A generator run on a few small files: built unoptimised, in a third of
	@# the time.
	CARGO_PROFILE_RELEASE_OPT_LEVEL=0 CARGO_PROFILE_RELEASE_LTO=false \
		CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 CARGO_PROFILE_RELEASE_DEBUG=false \
		$(CARGO) install wit-bindgen-cli --version $(WIT_BINDGEN_VERSION) --locked --force \
		--no-default-features --features c,go --root build/tools
	@src=$$(ls -d $${CARGO_HOME:-$$HOME/.cargo}/registry/src/*/wit-bindgen-go-$(WIT_BINDGEN_VERSION)/src/pkg 2>/dev/null | head -n1); \
		test -n "$$src" || { echo "wit-bindgen-go $(WIT_BINDGEN_VERSION)'s source is not in cargo's registry (CARGO_HOME)" >&2; exit 1; }; \
		rm -rf $(GO_PKG) && cp -r "$$src" $(GO_PKG)
	@touch $@

# componentize-js, pinned by each package's package-lock.json.
%/node_modules/.installed: %/package.json %/package-lock.json
	@command -v npm >/dev/null || { echo "npm (Node.js 18+) is required: apt-get install nodejs npm" >&2; exit 1; }
	cd $* && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

lang-plugins: plugins toolchains $(REF_DIR)/reference-rust.wasm $(REF_DIR)/reference-js.wasm \
		$(REF_DIR)/reference-py.wasm $(REF_DIR)/reference-c.wasm $(REF_DIR)/reference-go.wasm \
		$(LANG_DIR)/tool-js.wasm
	@for lang in rust js py c go; do cp guest-plugins/reference.toml $(REF_DIR)/reference-$$lang.toml; done
	@ls -l $(REF_DIR)/*.wasm $(LANG_DIR)/*.wasm

# A tool plugin in JavaScript (world without http: see its wit/world.wit).
$(LANG_DIR)/tool-js.wasm: $(TOOL_JS)/app.js $(TOOL_JS)/wit/world.wit $(TOOL_JS)/node_modules/.installed wit/0.2/*.wit
	@mkdir -p $(LANG_DIR)
	cd $(TOOL_JS) && npm run --silent build

$(REF_DIR)/reference-rust.wasm: $(GUEST_OUT)/reference_rust.wasm
	@mkdir -p $(REF_DIR)
	cp $< $@

$(REF_DIR)/reference-js.wasm: $(REF_JS)/app.js $(REF_JS)/node_modules/.installed wit/0.2/*.wit
	@mkdir -p $(REF_DIR)
	cd $(REF_JS) && npm run --silent build

$(REF_DIR)/reference-py.wasm: guest-plugins/reference-py/app.py $(VENV_STAMP) wit/0.2/*.wit
	@mkdir -p $(REF_DIR)
	$(COMPONENTIZE_PY) -d wit/0.2 -w enricher-plugin componentize --stub-wasi \
		-p guest-plugins/reference-py app -o $@

# C: wit-bindgen's C bindings, zig's clang and wasi-libc (wasm32-wasi,
# reactor), then `wasm-tools component new` (no WASI is left to adapt).
$(REF_DIR)/reference-c.wasm: $(REF_C)/*.c $(REF_C)/*.h $(WIT_BINDGEN_STAMP) $(VENV_STAMP) wit/0.2/*.wit
	@mkdir -p $(REF_DIR) $(C_GEN)
	$(WIT_BINDGEN) c wit/0.2 --world enricher-plugin --out-dir $(C_GEN)
	$(PYTHON) -m ziglang cc --target=wasm32-wasi -mexec-model=reactor -Os -s \
		-I$(C_GEN) -o $(C_GEN)/core.wasm $(REF_C)/*.c $(C_GEN)/enricher_plugin.c \
		$(C_GEN)/enricher_plugin_component_type.o
	$(WASM_TOOLS) component new $(C_GEN)/core.wasm -o $@

# Go: wit-bindgen's Go bindings (a module with its go.mod) beside our package
# (whose directory name is the generator's), `go build` for wasip1 as a
# reactor (c-shared), then `wasm-tools component new` with the preview-1
# adapter. GOPROXY=off: the one dependency, go.bytecodealliance.org/pkg, is
# replaced by the local copy.
$(REF_DIR)/reference-go.wasm: $(REF_GO)/*/*.go $(WIT_BINDGEN_STAMP) $(VENV_STAMP) \
		$(REF_JS)/node_modules/.installed wit/0.2/*.wit
	@mkdir -p $(REF_DIR)
	rm -rf $(GO_GEN)
	$(WIT_BINDGEN) go wit/0.2 --world enricher-plugin --out-dir $(GO_GEN)
	cp -r $(REF_GO)/. $(GO_GEN)/
	$(GO) -C $(GO_GEN) mod edit -replace=go.bytecodealliance.org/pkg=$(abspath $(GO_PKG))
	GOOS=wasip1 GOARCH=wasm GOTOOLCHAIN=local GOPROXY=off GOFLAGS=-mod=mod $(GO) -C $(GO_GEN) \
		build -buildmode=c-shared -ldflags='-checklinkname=0 -s -w' -o core.wasm .
	$(WASM_TOOLS) component embed wit/0.2 --world enricher-plugin $(GO_GEN)/core.wasm -o $(GO_GEN)/embedded.wasm
	$(WASM_TOOLS) component new $(GO_GEN)/embedded.wasm \
		--adapt wasi_snapshot_preview1=$(WASI_ADAPTER) -o $@

clean:
	$(CARGO) clean
	cd guest-plugins && $(CARGO) clean
	rm -rf build

# --- MCP front: the Python MCP client the integration tests drive
# `toolhost serve` with (in the shared venv), and the third-party MCP servers
# they proxy. ---
venv: $(VENV_STAMP)

## Upstream MCP servers from npm, pinned by tests/upstream/package-lock.json.
upstream: tests/upstream/node_modules/.installed

.PHONY: venv upstream toolchains lang-plugins
# --- end MCP front ---

## ---------------------------------------------------------------------------
## The trace replay (`replay --traces`): the task repositories of the public
## agent trajectories in tests/replay/traces, as PyPI source distributions
## (wheels.txt: wheels) pinned by version and sha256 in tests/replay/traces/sdists.txt, unpacked
## into build/replay/trees/NAME-VERSION. The only network the bench needs.
## ---------------------------------------------------------------------------
REPLAY_SDISTS := tests/replay/traces/sdists.txt
REPLAY_WHEELS := tests/replay/traces/wheels.txt
REPLAY_TREES  := build/replay/trees
REPLAY_STAMP  := $(REPLAY_TREES)/.unpacked

replay-trees: $(REPLAY_STAMP)

$(REPLAY_STAMP): $(REPLAY_SDISTS) $(REPLAY_WHEELS) $(VENV_STAMP)
	@rm -rf $(REPLAY_TREES) build/replay/dist
	@mkdir -p $(REPLAY_TREES) build/replay/dist
	@# One pin at a time: two traces may need two releases of one package,
	@# which a single pip resolution refuses.
	@grep -v '^#' $(REPLAY_SDISTS) | while read -r pin; do \
		echo "$$pin" > build/replay/pin.txt; \
		$(PYTHON) -m pip download --quiet --disable-pip-version-check --no-deps --no-binary :all: \
			--require-hashes -r build/replay/pin.txt -d build/replay/dist || exit 1; \
	done
	@grep -v '^#' $(REPLAY_WHEELS) | while read -r pin; do \
		echo "$$pin" > build/replay/pin.txt; \
		$(PYTHON) -m pip download --quiet --disable-pip-version-check --no-deps --only-binary :all: \
			--require-hashes -r build/replay/pin.txt -d build/replay/dist || exit 1; \
	done
	@for f in build/replay/dist/*.tar.gz; do tar -xzf $$f -C $(REPLAY_TREES); done
	@for f in build/replay/dist/*.whl; do \
		name=$$(basename $$f | cut -d- -f1-2); \
		$(VENV)/bin/python -m zipfile -e $$f $(REPLAY_TREES)/$$name; \
	done
	@touch $@

.PHONY: replay-trees

## ---------------------------------------------------------------------------
## The cluster tests and bench (`tests/cluster.rs`, `--bin cluster`) start a
## real redis-server on loopback: Debian's, installed when missing (CI runs
## as root).
## ---------------------------------------------------------------------------
redis:
	@command -v redis-server >/dev/null && command -v redis-cli >/dev/null || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server; }

.PHONY: redis

## ---------------------------------------------------------------------------
## The registry tests (`tests/registry.rs`) publish and pull plugins through
## a real OCI registry on loopback: Debian's `docker-registry` (Distribution
## 2.8), installed when missing (CI runs as root).
## ---------------------------------------------------------------------------
docker-registry:
	@command -v docker-registry >/dev/null || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker-registry; }

.PHONY: docker-registry
